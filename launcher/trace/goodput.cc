#include "launcher/trace/goodput.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "launcher/trace/checkpoint_advice.h"
#include "launcher/trace/goodput_phases.h"
#include "launcher/trace/goodput_records.h"
#include "launcher/trace/goodput_split.h"

namespace dlaunch {

const char kGoodputNoReports[] = "not known: the job's ranks sent no step reports";

namespace {

// The seconds of [begin, end) that the pauses of one kind cover, for the rank that spent most.
double PausedSeconds(const std::vector<GoodputPause>& pauses, bool checkpoint, int64_t begin,
                     int64_t end) {
  std::map<int, int64_t> by_rank;
  for (const GoodputPause& p : pauses) {
    if (p.checkpoint != checkpoint) continue;
    const int64_t b = std::max(p.begin_us, begin), e = std::min(p.end_us, end);
    if (e > b) by_rank[p.rank] += e - b;
  }
  int64_t most = 0;
  for (const auto& [rank, us] : by_rank) most = std::max(most, us);
  return GoodputSeconds(most);
}

void AddSpan(v1::RoundGoodput* round, const std::string& name, int64_t begin_us, int64_t end_us,
             int64_t origin_us) {
  if (end_us <= begin_us) return;
  v1::GoodputSpan* s = round->add_spans();
  s->set_name(name);
  s->set_begin_s(GoodputSeconds(begin_us - origin_us));
  s->set_end_s(GoodputSeconds(end_us - origin_us));
}

class Accountant {
 public:
  explicit Accountant(const TraceInput& in)
      : r_(ReadGoodputRecords(in)), origin_us_(r_.origin_us), end_us_(r_.end_us) {}

  v1::GoodputAccount Run() {
    account_.set_job_id(r_.job_id);
    account_.set_finished(r_.finished);
    for (const std::string& note : r_.notes) account_.add_notes(note);
    if (!origin_us_) {
      account_.add_notes("not known: the journal has no timed events");
      return account_;
    }
    account_.set_start_unix_us(*origin_us_);
    end_us_ = std::max(end_us_, *origin_us_);
    account_.set_wall_s(GoodputSeconds(end_us_ - *origin_us_));
    if (!account_.finished()) {
      account_.add_notes("the journal has no job_finished: the account ends at its last record");
    }
    // Rounds tile the job: each from its start to the next one's.
    std::vector<int> order;
    for (const auto& [r, rec] : r_.rounds) order.push_back(r);
    std::vector<int64_t> starts;
    for (size_t i = 0; i < order.size(); ++i) {
      const GoodputRoundRecords& rec = r_.rounds.at(order[i]);
      int64_t s = i == 0 ? *origin_us_
                         : rec.started_us.value_or(rec.first_event_us.value_or(end_us_));
      if (!starts.empty()) s = std::max(s, starts.back());
      starts.push_back(std::clamp(s, *origin_us_, end_us_));
    }
    for (size_t i = 0; i < order.size(); ++i) {
      const bool last = i + 1 == order.size();
      AccountRound(order[i], starts[i], last ? end_us_ : starts[i + 1], last);
    }
    for (const v1::RoundGoodput& r : account_.rounds()) AddGoodputSplit(r.split(), account_.mutable_split());
    const double wall = account_.wall_s();
    account_.set_goodput(wall > 0 ? account_.split().productive().seconds() / wall : 0);
    *account_.mutable_checkpoint_advice() =
        AdviseCheckpointInterval(account_, r_.checkpoint_steps, r_.checkpoint_costs, failures_, r_.traced);
    return account_;
  }

 private:
  std::vector<v1::GoodputPhase> RoundStartupPhases(const GoodputRoundRecords& rec, int64_t begin,
                                                   int64_t steps_begin) const {
    std::map<int, int64_t> started;
    for (const auto& [rank, at] : rec.rank_started_us) {
      if (at) started[rank] = *at;
    }
    return StartupPhases(r_.phases, started, begin, steps_begin);
  }

  // The moment every rank of `rec` has passed `step` again: within the report that crosses it,
  // in proportion to the steps it covers. Reports only give a rank's step at their ends.
  static int64_t PassedStep(const GoodputRoundRecords& rec, int64_t step, int64_t resumed_at,
                            int64_t fallback_us) {
    int64_t passed = 0;
    for (const auto& [rank, list] : rec.ranks) {
      int64_t from = resumed_at, at = fallback_us;
      for (const GoodputProgress& p : list) {
        if (p.step > step) {
          const int64_t lo = std::min(from, p.step);
          const double share =
              p.step > lo ? static_cast<double>(std::max<int64_t>(step - lo, 0)) / (p.step - lo) : 0;
          at = p.begin_us + static_cast<int64_t>(share * (p.end_us - p.begin_us));
          break;
        }
        from = p.step;
      }
      passed = std::max(passed, at);
    }
    return passed;
  }

  void AccountRound(int round, int64_t begin, int64_t end, bool last) {
    const GoodputRoundRecords& rec = r_.rounds.at(round);
    v1::RoundGoodput* out = account_.add_rounds();
    const int64_t o = *origin_us_;
    out->set_round(round);
    out->set_begin_s(GoodputSeconds(begin - o));
    out->set_end_s(GoodputSeconds(end - o));
    out->set_wall_s(GoodputSeconds(end - begin));
    v1::GoodputSplit* split = out->mutable_split();

    // How the round ended: another round follows a failure; the last one ends as the job did.
    std::optional<int64_t> failure = rec.failure_us;
    if (failure) failure = std::clamp(*failure, begin, end);
    bool failed = !last || failure.has_value();
    if (last && account_.finished() && r_.result == "succeeded") failed = false;
    if (failed) {
      out->set_ended_by(absl::StrCat("failure", rec.failure_class.empty() ? "" : ": ", rec.failure_class));
    } else if (!account_.finished()) {
      out->set_ended_by("running");
    } else {
      out->set_ended_by(r_.result == "succeeded" ? "finished" : r_.result);
    }
    if (failed) ++failures_;

    const int64_t workers = std::clamp(
        rec.workers_started_us.value_or(rec.last_worker_started_us.value_or(begin)), begin, end);
    const std::string startup_name = round == 0 ? "start-up" : "restart start-up";
    v1::GoodputFigure* startup = round == 0 ? split->mutable_startup() : split->mutable_failure();

    for (v1::GoodputFigure* f : MutableGoodputFigures(split)) *f = GoodputFigureOf(0, v1::MEASURED);
    if (rec.ranks.empty()) {
      // Nothing says when steps began or ended: only the launcher's stamps split the round.
      const int64_t stop = failed && failure
                               ? std::max(*failure, workers)
                               : std::clamp(rec.last_worker_ended_us.value_or(end), workers, end);
      out->set_launch_s(GoodputSeconds(workers - begin));
      *startup = GoodputFigureOf(GoodputSeconds(workers - begin), v1::MEASURED,
                        round == 0 ? "launch to every worker started; the ranks' own start-up is "
                                     "not split"
                                   : "a restart: stop, wait and the next round's launch");
      *split->mutable_not_split() = GoodputFigureOf(GoodputSeconds(stop - workers), v1::NOT_KNOWN, kGoodputNoReports);
      for (v1::GoodputFigure* f : {split->mutable_productive(), split->mutable_evaluation(),
                                   split->mutable_checkpoint(), split->mutable_redone(),
                                   split->mutable_straggler()}) {
        *f = GoodputFigureOf(0, v1::NOT_KNOWN, kGoodputNoReports);
      }
      const double after = GoodputSeconds(end - stop);
      if (failed) {
        split->mutable_failure()->set_seconds(split->failure().seconds() + after);
        if (split->failure().note().empty()) split->mutable_failure()->set_note("detection, stop and wait");
      } else {
        *split->mutable_tail() = GoodputFigureOf(after, v1::MEASURED, "last worker ended to the job's end");
      }
      for (v1::GoodputPhase& p : RoundStartupPhases(rec, begin, stop)) {
        *out->add_startup_phases() = std::move(p);
      }
      AddSpan(out, startup_name, begin, workers, o);
      AddSpan(out, "not split", workers, stop, o);
      AddSpan(out, failed ? "stop and wait" : "tail", stop, end, o);
      return;
    }

    // Steps: from every rank's first report's interval to the newest report of the round.
    int64_t first = std::numeric_limits<int64_t>::min(), newest = begin;
    int64_t first_step = std::numeric_limits<int64_t>::max(), last_step = 0, resumed = 0;
    std::map<int, double> comm_wait;
    bool any_comm_wait = false;
    for (const auto& [rank, list] : rec.ranks) {
      first = std::max(first, list.front().begin_us);
      first_step = std::min(first_step, list.front().step);
      if (resumed == 0 || (list.front().checkpoint_step > 0 && list.front().checkpoint_step < resumed)) {
        resumed = list.front().checkpoint_step;
      }
      // The agent folds a rank's reports between heartbeats, so a first line can already name a
      // checkpoint written in this round: the newest one reported before the failure is the
      // one a restart resumes from, when it is older.
      if (round > 0 && checkpoint_before_ > 0 && (resumed == 0 || checkpoint_before_ < resumed)) {
        resumed = checkpoint_before_;
      }
      for (const GoodputProgress& p : list) {
        newest = std::max(newest, p.end_us);
        last_step = std::max(last_step, p.step);
        comm_wait[rank] += p.comm_wait_s;
        any_comm_wait = any_comm_wait || p.comm_wait_s > 0;
      }
    }
    const int64_t stop_limit = failure ? *failure : end;
    const int64_t steps_begin = std::clamp(first, workers, stop_limit);
    const int64_t steps_end = std::clamp(newest, steps_begin, stop_limit);
    out->set_first_step(first_step);
    out->set_last_step(last_step);
    out->set_resumed_at_step(resumed);
    out->set_launch_s(GoodputSeconds(workers - begin));
    out->set_in_ranks_s(GoodputSeconds(steps_begin - workers));
    *startup = GoodputFigureOf(GoodputSeconds(steps_begin - begin), v1::MEASURED,
                      round == 0 ? "launch to every rank's first step (to a report's resolution)"
                                 : "a restart: stop, wait and the next round's start-up");
    for (v1::GoodputPhase& p : RoundStartupPhases(rec, begin, steps_begin)) {
      *out->add_startup_phases() = std::move(p);
    }

    // Redone: the steps earlier rounds had reported, run again here.
    int64_t redo_end = steps_begin;
    // A first line past that step can still hold it: the agent folds a rank's reports, so a
    // round resumed at an older checkpoint ran those steps inside its first line's interval.
    if (round > 0 && max_step_before_ > 0 &&
        (first_step <= max_step_before_ || (resumed > 0 && resumed < max_step_before_))) {
      redo_end = std::clamp(PassedStep(rec, max_step_before_, resumed, steps_end), steps_begin,
                            steps_end);
      const int64_t from = resumed > 0 ? resumed : std::max<int64_t>(first_step - 1, 0);
      out->set_redone_steps(std::max<int64_t>(max_step_before_ - from, 0));
    }
    max_step_before_ = std::max(max_step_before_, last_step);
    for (const auto& [rank, list] : rec.ranks) {
      for (const GoodputProgress& p : list) checkpoint_before_ = std::max(checkpoint_before_, p.checkpoint_step);
    }

    const bool ckpt_known = r_.traced || r_.checkpoint_phases;
    const bool eval_known = r_.traced || r_.evaluation_phases;
    const double ckpt_all = PausedSeconds(r_.pauses, true, steps_begin, steps_end);
    const double eval_all = PausedSeconds(r_.pauses, false, steps_begin, steps_end);
    const double ckpt_redo = PausedSeconds(r_.pauses, true, steps_begin, redo_end);
    const double eval_redo = PausedSeconds(r_.pauses, false, steps_begin, redo_end);
    const double redone = std::max(0.0, GoodputSeconds(redo_end - steps_begin) - ckpt_redo - eval_redo);
    const double window = GoodputSeconds(steps_end - steps_begin);
    double ckpt = ckpt_known ? std::min(ckpt_all, window) : 0;
    double eval = eval_known ? std::min(eval_all, window - ckpt) : 0;
    const char* source = r_.traced ? "dlaunch-worker's step trace" : "the ranks' phase reports";
    if (ckpt_known) {
      *split->mutable_checkpoint() = GoodputFigureOf(ckpt, v1::MEASURED, source);
    } else {
      *split->mutable_checkpoint() = GoodputFigureOf(
          0, v1::NOT_KNOWN,
          r_.checkpoint_steps.empty()
              ? "not known: no report says so; counted as productive"
              : "not known: reports name checkpoints but not their length; counted as productive");
    }
    if (eval_known) {
      *split->mutable_evaluation() = GoodputFigureOf(eval, v1::MEASURED, source);
    } else {
      *split->mutable_evaluation() =
          GoodputFigureOf(0, v1::NOT_KNOWN, "not known: no report says so; counted as productive");
    }
    const double redone_kept = std::min(redone, window - ckpt - eval);
    *split->mutable_redone() = GoodputFigureOf(redone_kept, v1::MEASURED,
                                      round > 0 ? "reports' steps before the failure vs after"
                                                : "");
    const double steps_left = std::max(0.0, window - ckpt - eval - redone_kept);
    // Waiting on the slowest rank: the spread of the ranks' communication waits.
    double straggler = 0;
    if (any_comm_wait && comm_wait.size() > 1) {
      double lo = std::numeric_limits<double>::max(), hi = 0;
      for (const auto& [rank, s] : comm_wait) {
        lo = std::min(lo, s);
        hi = std::max(hi, s);
      }
      const double share = window > 0 ? steps_left / window : 0;
      straggler = std::min(steps_left, (hi - lo) * share);
      *split->mutable_straggler() =
          GoodputFigureOf(straggler, v1::BOUND,
                 "the spread of the ranks' reported communication waits (at most this)");
    } else if (rec.stragglers > 0) {
      // The score's own estimate: the named node's slow steps beyond the median's pace, which
      // every other rank spent waiting for it (docs/stragglers.md).
      straggler = std::min(steps_left, rec.straggler_waited_s);
      *split->mutable_straggler() = GoodputFigureOf(
          straggler, v1::BOUND,
          "the straggler score: the named nodes' steps beyond the median's pace (at most this)");
    } else {
      *split->mutable_straggler() =
          GoodputFigureOf(0, v1::NOT_KNOWN,
                 "not known: the reports carry no communication wait (dlaunch-worker's is inside "
                 "backward)");
    }
    *split->mutable_productive() =
        GoodputFigureOf(steps_left - straggler, straggler > 0 ? v1::BOUND : v1::MEASURED,
               straggler > 0 ? "at least this: the straggler bound is taken from it" : "");

    const double after = GoodputSeconds(end - steps_end);
    if (failed) {
      split->mutable_failure()->set_seconds(split->failure().seconds() + after);
      if (split->failure().note().empty()) split->mutable_failure()->set_note("detection, stop and wait");
    } else {
      *split->mutable_tail() = GoodputFigureOf(after, v1::MEASURED, "last report to the job's end");
    }

    AddSpan(out, startup_name, begin, steps_begin, o);
    AddSpan(out, "redone", steps_begin, redo_end, o);
    AddSpan(out, "training", redo_end, steps_end, o);
    if (failed) {
      const int64_t detected = std::clamp(failure.value_or(steps_end), steps_end, end);
      AddSpan(out, "detection", steps_end, detected, o);
      AddSpan(out, "stop and wait", detected, end, o);
    } else {
      AddSpan(out, "tail", steps_end, end, o);
    }
  }

  const GoodputRecords r_;
  v1::GoodputAccount account_;
  const std::optional<int64_t> origin_us_;
  int64_t end_us_ = 0;
  int64_t max_step_before_ = 0;
  int64_t checkpoint_before_ = 0;  // the newest checkpoint step reported in earlier rounds
  int failures_ = 0;
};

}  // namespace

v1::GoodputAccount ComputeGoodput(const TraceInput& input) { return Accountant(input).Run(); }

}  // namespace dlaunch
