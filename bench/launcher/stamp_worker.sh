#!/bin/sh
# Benchmark worker for bench/launcher: records when it started, then exits.
#
# Appends "<RANK> <unix time, ns resolution>" to $DLAUNCH_BENCH_STAMPS (one short O_APPEND write
# per worker, so concurrent workers do not interleave). If $DLAUNCH_BENCH_SLEEP is set, it then
# sleeps that many seconds so that the agents can be observed while a job is running.
date "+${RANK:-?} %s.%N" >> "${DLAUNCH_BENCH_STAMPS:?DLAUNCH_BENCH_STAMPS is not set}"
if [ -n "${DLAUNCH_BENCH_SLEEP:-}" ]; then
  exec sleep "$DLAUNCH_BENCH_SLEEP"
fi
