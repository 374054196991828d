// SpecReader's placement sections: `gpus:` and `cpus:` (binding, per-rank CPU lists and GPUs).
#include "launcher/spec/spec_reader.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "launcher/spec/spec_scalars.h"

namespace dlaunch {

void SpecReader::Gpus(const SpecField& field, JobSpec* spec) {
  std::map<std::string, SpecField> fields = Fields(field.value, "gpus", field.mark);
  std::string binding;
  if (fields.count("binding") && OneOf(fields["binding"], {"shared", "isolate"}, &binding)) {
    spec->isolate_gpus = binding == "isolate";
    spec->gpu_binding_given = true;
  }
  if (fields.count("per_proc")) Int(fields["per_proc"], &spec->gpus_per_proc);
  if (fields.count("per_node")) Int(fields["per_node"], &spec->gpus_per_node);
}

void SpecReader::Cpus(const SpecField& field, JobSpec* spec) {
  std::map<std::string, SpecField> fields = Fields(field.value, "cpus", field.mark);
  std::string binding;
  if (fields.count("binding") && OneOf(fields["binding"], {"cores", "none"}, &binding)) {
    spec->cpu_binding_none = binding == "none";
  }
  if (fields.count("map")) CpuMap(fields["map"], &spec->cpu_map);
}

// `map:` is a list with one entry per local rank: {cpus: "0-7,32-39", gpu: 3}, or just the CPU
// list. Each entry's position is kept so the value checks can point at it.
void SpecReader::CpuMap(const SpecField& field, std::vector<CpuMapEntry>* map) {
  constexpr absl::string_view kEntry = "a CPU list such as \"0-7\" or {cpus: \"0-7\", gpu: 0}";
  map->clear();
  if (field.value.IsNull()) return;
  if (!field.value.IsSequence()) {
    WrongType(field, "a list with one entry per local rank");
    return;
  }
  for (size_t i = 0; i < field.value.size(); ++i) {
    const std::string path = absl::StrCat(field.path, "[", i, "]");
    const YAML::Node item = field.value[i];
    Place(path, item.Mark());
    CpuMapEntry entry;
    if (item.IsMap()) {
      for (const auto& kv : item) {
        const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "";
        const SpecField value{absl::StrCat(path, ".", key), kv.second, kv.second.Mark()};
        if (key == "cpus") {
          CpuList(value, &entry.cpus);
        } else if (key == "gpu") {
          Int(value, &entry.gpu);
        } else {
          Report(kv.first.Mark(), "",
                 absl::StrCat("unknown key '", key, "' in '", path, "' (expected cpus, gpu)"));
        }
      }
      if (!item["cpus"]) Report(item.Mark(), path, absl::StrCat(path, " has no 'cpus'"));
    } else if (item.IsScalar()) {
      CpuList(SpecField{path, item, item.Mark()}, &entry.cpus);
    } else {
      WrongType(SpecField{path, item, item.Mark()}, kEntry);
    }
    map->push_back(std::move(entry));
  }
}

void SpecReader::CpuList(const SpecField& field, std::vector<int>* cpus) {
  std::string text;
  if (!Scalar(field, "a CPU list such as \"0-7,32-39\"", &text)) return;
  absl::StatusOr<std::vector<int>> parsed = ParseCpuList(text);
  if (!parsed.ok()) {
    Report(field.mark, field.path, absl::StrCat(field.path, ": ", parsed.status().message()));
    return;
  }
  *cpus = *std::move(parsed);
}

}  // namespace dlaunch
