#include "agent/health/rank_cpu.h"

#include <filesystem>
#include <fstream>
#include <sstream>

namespace dlaunch {

bool AddSchedstat(const std::string& line, v1::RankCpu* into) {
  std::istringstream in(line);
  unsigned long long run_ns = 0, delay_ns = 0;
  if (!(in >> run_ns >> delay_ns)) return false;
  into->set_cpu_s(into->cpu_s() + static_cast<double>(run_ns) / 1e9);
  into->set_run_delay_s(into->run_delay_s() + static_cast<double>(delay_ns) / 1e9);
  return true;
}

std::optional<v1::RankCpu> ReadRankCpu(pid_t pid, const std::string& proc) {
  std::error_code ec;
  std::filesystem::directory_iterator tasks(proc + "/" + std::to_string(pid) + "/task", ec);
  if (ec) return std::nullopt;
  v1::RankCpu cpu;
  bool any = false;
  for (const auto& task : tasks) {
    std::ifstream f(task.path() / "schedstat");
    std::string line;
    // A thread may end between the listing and the read: it is skipped.
    if (std::getline(f, line) && AddSchedstat(line, &cpu)) any = true;
  }
  if (!any) return std::nullopt;
  return cpu;
}

}  // namespace dlaunch
