// Shared by StackDumper's tests (stack_dumper_test.cc, process/stack_dumper_socket_test.cc): a
// dumper on a fake process launcher and a manual clock, with a made-up view of the targets, and
// the recorded stacks in tests/agent/stacks/.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include <boost/asio.hpp>
#include <gtest/gtest.h>

#include "agent/health/stack_dumper.h"
#include "tests/testing/fake_agent_clock.h"
#include "tests/testing/fake_process_launcher.h"
#include "tests/testing/test_files.h"

namespace dlaunch::stack_dumper_testing {

using std::chrono::milliseconds;

class StackDumperTest : public ::testing::Test {
 protected:
  StackDumperTest()
      : dumper_(io_, clock_, [this](const std::string& l) { log_.push_back(l); },
                SupervisorSeams{&launcher_, &clock_},
                StackDumper::Probe{
                    [this](pid_t pid) { return python_.count(pid) > 0; },
                    [this](pid_t pid) { return servers_.count(pid) ? servers_[pid] : ""; },
                    [this](std::string* why) {
                      if (py_spy_.empty()) *why = "py-spy is not on PATH";
                      return py_spy_;
                    },
                    [this](pid_t pid) { return stopped_.count(pid) > 0; }}) {}

  void Settle() {
    for (int i = 0; i < 10; ++i) {
      io_.restart();
      if (io_.poll() == 0) return;
    }
  }
  void Start(const std::vector<StackDumper::Target>& targets, int budget_ms = 10000) {
    dumper_.Start(targets, stacks_, milliseconds(budget_ms), [this](auto results) {
      ++done_;
      results_ = std::move(results);
    });
    Settle();
  }
  std::string Stacks(int rank) const {
    return ReadFile(stacks_ + "/rank-" + std::to_string(rank) + ".txt");
  }

  boost::asio::io_context io_;
  FakeProcessLauncher launcher_;
  ManualTimerClock clock_;
  ScratchDir dir_;
  std::string stacks_ = dir_.path() + "/stacks";
  std::vector<std::string> log_;
  std::set<pid_t> python_;
  std::set<pid_t> stopped_;
  std::map<pid_t, std::string> servers_;
  std::string py_spy_ = "/opt/py-spy/bin/py-spy";
  int done_ = 0;
  std::vector<StackDumper::Result> results_;
  StackDumper dumper_;
};

// The text of a recorded stack in tests/agent/stacks/.
inline std::string Fixture(const std::string& name) {
  return ReadFile(std::string(DLAUNCH_SOURCE_DIR) + "/tests/agent/stacks/" + name);
}

}  // namespace dlaunch::stack_dumper_testing
