#!/bin/sh
# Benchmark worker for bench/restart: appends "<round> <rank> start <unix time>" to
# $BENCH_STAMPS when it starts. In round 0 the rank $BENCH_VICTIM waits until $BENCH_WORLD ranks
# have started, appends "0 <rank> kill <time>" and SIGKILLs itself; the other ranks of round 0
# wait to be stopped. In later rounds every rank exits 0 after a short while.
# The round is 1 once the kill is recorded: torchrun's TORCHELASTIC_RESTART_COUNT counts only
# the failing node's restarts (the other nodes re-rendezvous with their count unchanged).
stamps=${BENCH_STAMPS:?BENCH_STAMPS is not set}
round=0
if grep -q ' kill ' "$stamps" 2>/dev/null; then round=1; fi
date "+$round $RANK start %s.%N" >> "$stamps"
if [ "$round" = 0 ]; then
  if [ "$RANK" = "${BENCH_VICTIM:-1}" ]; then
    i=0
    while [ "$(grep -c '^0 .* start' "$stamps")" -lt "${BENCH_WORLD:?}" ] && [ $i -lt 600 ]; do
      sleep 0.05; i=$((i + 1))
    done
    sleep 0.2
    date "+0 $RANK kill %s.%N" >> "$stamps"
    kill -9 $$
  fi
  exec sleep 60
fi
exec sleep 0.3
