#include "launcher/run/doctor.h"

#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/process.h"

namespace dlaunch {
namespace {

// The checks in the order agents run them, for the table's columns.
const std::vector<std::string>& CheckNames() {
  static const auto* names = new std::vector<std::string>{
      "gpus", "gpu processes", "disk", "command", "ports", "clock", "link", "compute"};
  return *names;
}

const char* VerdictWord(const v1::CheckResult* c) {
  if (c == nullptr) return "-";
  switch (c->verdict()) {
    case v1::CheckResult::PASSED: return "ok";
    case v1::CheckResult::FAILED: return "FAIL";
    case v1::CheckResult::SKIPPED: return "skip";
    default: return "?";
  }
}

const v1::CheckResult* Find(const Participant& p, const std::string& name) {
  for (const v1::CheckResult& c : p.checks) {
    if (c.name() == name) return &c;
  }
  return nullptr;
}

}  // namespace

Doctor::Doctor(boost::asio::io_context& io, double timeout_s) : io_(io), deadline_(io) {
  deadline_.expires_after(std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000)));
}

Doctor::~Doctor() {
  if (launchers_) launchers_->KillAll();
}

absl::Status Doctor::Start(const std::vector<std::vector<std::string>>& launch_commands,
                           const std::string& logs_dir) {
  launchers_ = std::make_unique<ChildSupervisor>(
      io_, logs_dir, 10,
      ChildSupervisor::Callbacks{nullptr,
                                 [this](const ChildExit& e) {
                                   --launchers_running_;
                                   if (!WIFEXITED(e.wait_status) || WEXITSTATUS(e.wait_status) != 0) {
                                     report_.never_heard.push_back(absl::StrCat(
                                         "node launcher #", e.rank, " ended with ",
                                         DescribeWaitStatus(e.wait_status),
                                         e.tail.empty() ? "" : ": " + e.tail.back()));
                                   }
                                   MaybeEnd();
                                 }},
      // By launch index, as a run's launchers before their agents have node ids: in a job
      // directory agent-<n>.log is always node n's (AgentLogs).
      "launcher-");
  if (absl::Status st = launchers_->StartCommands(launch_commands); !st.ok()) return st;
  launchers_running_ = static_cast<int>(launch_commands.size());
  deadline_.async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;
    report_.timed_out = true;
    launchers_->KillAll();
    ended_ = true;
    io_.stop();
  });
  return absl::OkStatus();
}

void Doctor::HandleJoin(const Participant& participant, JoinReply reply) {
  report_.nodes.push_back(participant);
  v1::JoinResponse r;
  r.set_checks_only(true);
  reply(std::move(r));
}

void Doctor::HandleRefused(const std::string& peer, const std::string& method) {
  report_.never_heard.push_back(absl::StrCat("a call of ", method, " from ", peer,
                                             " without the job's token was refused"));
}

void Doctor::MaybeEnd() {
  // Every agent exits once its checks are answered: the last node launcher's end is the end.
  if (ended_ || launchers_running_ > 0) return;
  ended_ = true;
  deadline_.cancel();
  io_.stop();
}

std::string RenderDoctorReport(const DoctorReport& report, int expected) {
  std::vector<Participant> nodes = report.nodes;
  std::stable_sort(nodes.begin(), nodes.end(),
                   [](const Participant& a, const Participant& b) { return a.host < b.host; });
  // Agents sharing a host (a local run) are told apart by their pid.
  std::map<std::string, int> per_host;
  for (const Participant& p : nodes) ++per_host[p.host];
  for (Participant& p : nodes) {
    if (per_host[p.host] > 1) p.host = p.agent_id.substr(0, p.agent_id.rfind(':'));
  }
  size_t host_w = 4;
  for (const Participant& p : nodes) host_w = std::max(host_w, p.host.size());
  std::string out = absl::StrFormat("%-*s", host_w, "HOST");
  for (const std::string& name : CheckNames()) {
    absl::StrAppendFormat(&out, "  %-*s", std::max<size_t>(4, name.size()), name);
  }
  absl::StrAppend(&out, "  TIME\n");
  std::vector<std::string> failures;
  int fit = 0;
  for (const Participant& p : nodes) {
    absl::StrAppendFormat(&out, "%-*s", host_w, p.host);
    double total = 0;
    bool ok = true;
    for (const std::string& name : CheckNames()) {
      const v1::CheckResult* c = Find(p, name);
      absl::StrAppendFormat(&out, "  %-*s", std::max<size_t>(4, name.size()), VerdictWord(c));
      if (c == nullptr) continue;
      total = std::max(total, c->seconds());
      if (c->verdict() == v1::CheckResult::FAILED) {
        ok = false;
        failures.push_back(absl::StrCat(p.host, ": ", c->name(), ": ", c->detail()));
      }
    }
    fit += ok ? 1 : 0;
    absl::StrAppendFormat(&out, "  %.2f s\n", total);
  }
  for (const std::string& f : failures) absl::StrAppend(&out, "FAIL ", f, "\n");
  for (const std::string& n : report.never_heard) absl::StrAppend(&out, "NOT CHECKED ", n, "\n");
  absl::StrAppendFormat(&out, "%d of %d node(s) checked: %d fit, %d unfit", nodes.size(),
                        expected, fit, static_cast<int>(nodes.size()) - fit);
  if (report.timed_out) absl::StrAppend(&out, "; the rest did not answer in time");
  if (const SlowestCheck slowest = FindSlowestCheck(nodes); slowest.check != nullptr) {
    absl::StrAppendFormat(&out, "; slowest check %.2f s on %s (%s: %s)", slowest.check->seconds(),
                          slowest.node->host, slowest.check->name(), slowest.check->detail());
  }
  absl::StrAppend(&out, "\n");
  return out;
}

int DoctorExitCode(const DoctorReport& report, int expected) {
  if (static_cast<int>(report.nodes.size()) < expected || report.timed_out) return 1;
  for (const Participant& p : report.nodes) {
    if (!UnfitReasons(p).empty()) return 1;
  }
  return 0;
}

}  // namespace dlaunch
