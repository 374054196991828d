// SpecReader: reads one YAML document into a JobSpec, section by section, collecting every
// problem (with its position) instead of stopping at the first. Internal to the spec library;
// ParseJobSpec (job_spec_parser.h) is the public entry.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "launcher/spec/job_spec.h"
#include "launcher/spec/spec_field_reader.h"

namespace dlaunch {

// Reads one document into a JobSpec; problems() then holds what was wrong with it.
class SpecReader : public SpecFieldReader {
 public:
  void Read(const YAML::Node& root, JobSpec* spec);

 private:
  void Nodes(const SpecField& field, JobSpec* spec);
  void NprocPerNode(const SpecField& field, JobSpec* spec);
  void Hosts(const SpecField& field, JobSpec* spec);
  void Rendezvous(const SpecField& field, JobSpec* spec);
  void Heartbeat(const SpecField& field, JobSpec* spec);
  void Stop(const SpecField& field, JobSpec* spec);
  void Health(const SpecField& field, JobSpec* spec);
  void Restart(const SpecField& field, JobSpec* spec);  // restart: respawn | in_process
  void Restarts(const SpecField& field, JobSpec* spec);
  void Stragglers(const SpecField& field, JobSpec* spec);
  void Logs(const SpecField& field, JobSpec* spec);
  void Ranks(const SpecField& field, JobSpec* spec);
  void Gpus(const SpecField& field, JobSpec* spec);
  void Cpus(const SpecField& field, JobSpec* spec);
  void Preflight(const SpecField& field, PreflightSpec* preflight);
  void Share(const SpecField& field, double* out);
  void CpuMap(const SpecField& field, std::vector<CpuMapEntry>* map);
  void CpuList(const SpecField& field, std::vector<int>* cpus);
  void Scheduler(const SpecField& field, SchedulerSpec* scheduler);
  void Walltime(const SpecField& field, SchedulerSpec* scheduler);
  void Study(const SpecField& field, JobSpec* spec);
  void ScaleList(const SpecField& field, std::vector<int>* counts);
};

}  // namespace dlaunch
