#include "launcher/job/stall_inquiry.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace dlaunch {

void StallInquiry::Begin(const std::vector<int>& ranks, int suspect,
                         std::map<int, double> silent_s, double now_s, double due_s) {
  Clear();
  open_ = true;
  suspect_ = suspect;
  asked_ = ranks;
  std::sort(asked_.begin(), asked_.end());
  asked_.erase(std::unique(asked_.begin(), asked_.end()), asked_.end());
  silent_s_ = std::move(silent_s);
  detected_at_s_ = now_s;
  due_s_ = due_s;
}

bool StallInquiry::Note(const v1::RankStacks& stacks) {
  if (!open_ || !std::binary_search(asked_.begin(), asked_.end(), stacks.rank())) return false;
  if (!answered_.emplace(stacks.rank(), stacks).second) return false;
  int& said = stacks.has_waiting_in() ? said_waiting_ : said_others_;
  return said++ < (stacks.has_waiting_in() ? kSayWaiting : kSayOthers);
}

void StallInquiry::Clear() {
  open_ = false;
  asked_.clear();
  silent_s_.clear();
  answered_.clear();
  said_waiting_ = 0;
  said_others_ = 0;
}

std::vector<int> StallInquiry::Outside() const {
  std::vector<int> out;
  for (const auto& [rank, s] : answered_) {
    if (!s.source().empty() && !s.has_waiting_in()) out.push_back(rank);
  }
  return out;
}

std::vector<int> StallInquiry::Waiting() const {
  std::vector<int> out;
  for (const auto& [rank, s] : answered_) {
    if (s.has_waiting_in()) out.push_back(rank);
  }
  return out;
}

std::vector<int> StallInquiry::Unknown() const {
  std::vector<int> out;
  for (int rank : asked_) {
    auto it = answered_.find(rank);
    if (it == answered_.end() || (it->second.source().empty() && !it->second.has_waiting_in())) {
      out.push_back(rank);
    }
  }
  return out;
}

const v1::RankStacks* StallInquiry::StacksOf(int rank) const {
  auto it = answered_.find(rank);
  return it == answered_.end() ? nullptr : &it->second;
}

double StallInquiry::SilentFor(int rank) const {
  auto it = silent_s_.find(rank);
  return it == silent_s_.end() ? 0 : it->second;
}

std::string StallInquiry::WaitingClause(const std::vector<int>& waiting) const {
  if (waiting.empty()) return "";
  // The frame most of them wait in; ties go to the lowest rank's.
  std::map<std::string, int> count;
  std::string common;
  int best = 0;
  for (int rank : waiting) {
    auto it = answered_.find(rank);
    std::string frame;
    if (it != answered_.end() && it->second.has_waiting_in()) {
      frame = DescribeWaitFrame(it->second.waiting_in());
    } else if (it != answered_.end() && it->second.flight_record().last_seq() > 0) {
      const v1::FlightRecord& fr = it->second.flight_record();
      frame = absl::StrCat("collective ", fr.last_seq(),
                           fr.last_collective().empty() ? "" : " (" + fr.last_collective() + ")");
    } else {
      continue;
    }
    if (++count[frame] > best) {
      best = count[frame];
      common = frame;
    }
  }
  if (common.empty()) return "";
  return absl::StrCat(RankList(waiting), waiting.size() == 1 ? " waits" : " wait", " in ",
                      common, best < static_cast<int>(waiting.size()) ? " and elsewhere" : "");
}

std::optional<StallInquiry::RecorderVerdict> StallInquiry::Recorder() const {
  RecorderVerdict v;
  int64_t lowest = 0;
  int read = 0;
  for (int rank : asked_) {
    auto it = answered_.find(rank);
    const v1::FlightRecord* fr =
        it == answered_.end() || !it->second.has_flight_record() ? nullptr : &it->second.flight_record();
    if (fr == nullptr || fr->entries() == 0 || fr->last_seq() <= 0) {
      v.unread.push_back(rank);
      continue;
    }
    lowest = read++ == 0 ? fr->last_seq() : std::min(lowest, fr->last_seq());
    if (fr->last_seq() > v.seq) {
      v.seq = fr->last_seq();
      v.collective = fr->last_collective();
    }
  }
  if (read < 2 || lowest == v.seq) return std::nullopt;  // nothing to tell the ranks apart by
  for (int rank : asked_) {
    if (std::binary_search(v.unread.begin(), v.unread.end(), rank)) continue;
    const int64_t seq = answered_.at(rank).flight_record().last_seq();
    (seq == v.seq ? v.ahead : v.behind).push_back(rank);
  }
  return v;
}

std::string RecorderLine(const StallInquiry::RecorderVerdict& v, const StallInquiry& inquiry) {
  std::string line = absl::StrCat("flight recorder: ", RankList(v.ahead), " entered collective ",
                                  v.seq, v.collective.empty() ? "" : " (" + v.collective + ")");
  std::vector<std::string> behind;
  for (int rank : v.behind) {
    behind.push_back(absl::StrCat(rank, " at ", inquiry.StacksOf(rank)->flight_record().last_seq()));
  }
  absl::StrAppend(&line, "; ", v.behind.size() == 1 ? "rank " : "ranks ",
                  absl::StrJoin(behind, ", "), ": ", v.behind.size() == 1 ? "it" : "they",
                  " never entered it");
  if (!v.unread.empty()) absl::StrAppend(&line, " (", RankList(v.unread), ": not read)");
  return line;
}

std::optional<StuckAt> StuckAtOf(const v1::RankStacks& stacks) {
  if (!stacks.has_stuck_at()) return std::nullopt;
  const v1::StackFrame& f = stacks.stuck_at();
  return StuckAt{f.function(), f.file(), f.line(), stacks.source(), stacks.path()};
}

std::string StacksLine(const v1::RankStacks& stacks, bool inquiring) {
  std::string line = absl::StrCat("[dlaunch] rank ", stacks.rank(), ": ");
  if (stacks.source().empty()) {
    absl::StrAppend(&line, "no stacks could be taken (",
                    stacks.why_none().empty() ? "no source answered" : stacks.why_none(), ")");
    return line;
  }
  if (stacks.has_waiting_in()) {
    absl::StrAppend(&line, "waits in ", DescribeWaitFrame(stacks.waiting_in()));
    if (stacks.has_stuck_at()) {
      absl::StrAppend(&line, ", called from ", DescribeWaitFrame(stacks.stuck_at()));
    }
  } else if (stacks.has_stuck_at()) {
    absl::StrAppend(&line, "stopped in ", DescribeWaitFrame(stacks.stuck_at()),
                    inquiring ? ", outside any collective" : "");
  } else {
    absl::StrAppend(&line, inquiring ? "outside any collective" : "stacks taken");
  }
  absl::StrAppend(&line, " (", stacks.path(), ", from ", stacks.source(), ")");
  const v1::FlightRecord& fr = stacks.flight_record();
  if (fr.last_seq() > 0) {
    absl::StrAppend(&line, "; flight recorder: newest collective ", fr.last_seq(),
                    fr.last_collective().empty() ? "" : " (" + fr.last_collective() + ")");
  }
  return line;
}

std::string RankList(const std::vector<int>& ranks, size_t max) {
  if (ranks.size() == 1) return absl::StrCat("rank ", ranks[0]);
  if (ranks.size() > max) {
    return absl::StrCat("ranks ", absl::StrJoin(ranks.begin(), ranks.begin() + max, ", "),
                        ", ... (", ranks.size(), " in all)");
  }
  std::vector<int> head(ranks.begin(), ranks.end() - 1);
  return absl::StrCat("ranks ", absl::StrJoin(head, ", "), " and ", ranks.back());
}

std::string DescribeWaitFrame(const v1::StackFrame& frame) {
  std::string file = frame.file();
  for (const char* root : {"site-packages/", "dist-packages/"}) {
    const size_t at = file.rfind(root);
    if (at != std::string::npos) {
      file = file.substr(at + std::string(root).size());
      break;
    }
  }
  if (file.empty()) return frame.function();
  if (frame.line() <= 0) return absl::StrCat(frame.function(), " (", file, ")");
  return absl::StrCat(frame.function(), " (", file, ":", frame.line(), ")");
}

}  // namespace dlaunch
