#include "launcher/jobdir/job_record.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "common/file_io.h"

namespace dlaunch {
namespace fs = std::filesystem;
namespace {

using google::protobuf::Struct;
using google::protobuf::Value;

constexpr size_t kMaxIdNameLength = 40;

absl::StatusOr<Struct> ParseJsonObject(absl::string_view json) {
  Struct s;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  auto st = google::protobuf::util::JsonStringToMessage(std::string(json), &s, options);
  if (!st.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("not a JSON object: ", st.message().ToString()));
  }
  return s;
}

}  // namespace

std::string JsonValueText(const Value& v) {
  switch (v.kind_case()) {
    case Value::kStringValue:
      return v.string_value();
    case Value::kBoolValue:
      return v.bool_value() ? "true" : "false";
    case Value::kNullValue:
      return "null";
    case Value::kNumberValue: {
      double d = v.number_value();
      if (d == static_cast<double>(static_cast<long long>(d)) && std::abs(d) < 1e15) {
        return std::to_string(static_cast<long long>(d));
      }
      return absl::StrFormat("%g", d);
    }
    default: {
      std::string out;
      (void)google::protobuf::util::MessageToJsonString(v, &out);
      return out;
    }
  }
}

namespace {

std::string Field(const Struct& s, const std::string& key) {
  auto it = s.fields().find(key);
  return it == s.fields().end() ? "" : JsonValueText(it->second);
}

}  // namespace

std::string MakeJobId(const std::string& name, absl::Time now, uint32_t random) {
  std::string clean;
  for (char c : name) {
    clean += (absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-') ? c
                                                                                         : '-';
  }
  if (clean.size() > kMaxIdNameLength) clean.resize(kMaxIdNameLength);
  if (clean.empty()) clean = "job";
  return absl::StrCat(clean, "-", absl::FormatTime("%Y%m%d-%H%M%S", now, absl::UTCTimeZone()),
                      "-", absl::StrFormat("%04x", random & 0xffff));
}

std::string SubmitRecordToJson(const SubmitRecord& r) {
  Struct s;
  auto& f = *s.mutable_fields();
  f["job_id"].set_string_value(r.job_id);
  f["scheduler"].set_string_value(r.scheduler);
  f["scheduler_job_id"].set_string_value(r.scheduler_job_id);
  f["submit_time"].set_string_value(r.submit_time);
  f["site"].set_string_value(r.site);
  f["cwd"].set_string_value(r.cwd);
  f["spec_source"].set_string_value(r.spec_source);
  f["dry_run"].set_bool_value(r.dry_run);
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  std::string out;
  (void)google::protobuf::util::MessageToJsonString(s, &out, options);
  return out;
}

absl::StatusOr<SubmitRecord> ParseSubmitRecord(const std::string& json) {
  absl::StatusOr<Struct> s = ParseJsonObject(json);
  if (!s.ok()) return s.status();
  SubmitRecord r;
  r.job_id = Field(*s, "job_id");
  r.scheduler = Field(*s, "scheduler");
  r.scheduler_job_id = Field(*s, "scheduler_job_id");
  r.submit_time = Field(*s, "submit_time");
  r.site = Field(*s, "site");
  r.cwd = Field(*s, "cwd");
  r.spec_source = Field(*s, "spec_source");
  r.dry_run = Field(*s, "dry_run") == "true";
  if (r.job_id.empty()) return absl::DataLossError("submit.json has no job_id");
  return r;
}

absl::StatusOr<std::map<std::string, std::string>> ParseJsonObjectFields(const std::string& json) {
  absl::StatusOr<Struct> s = ParseJsonObject(json);
  if (!s.ok()) return s.status();
  std::map<std::string, std::string> out;
  for (const auto& [key, value] : s->fields()) out[key] = JsonValueText(value);
  return out;
}

absl::StatusOr<LauncherInfo> ParseLauncherInfo(const std::string& json) {
  absl::StatusOr<Struct> s = ParseJsonObject(json);
  if (!s.ok()) return s.status();
  LauncherInfo info;
  if (!absl::SimpleAtoi(Field(*s, "pid"), &info.pid) || info.pid <= 0) {
    return absl::DataLossError("launcher.json has no valid pid");
  }
  info.host = Field(*s, "host");
  info.address = Field(*s, "address");
  return info;
}

std::string DefaultJobRoot() {
  const char* root = std::getenv("DLAUNCH_JOB_ROOT");
  return (root != nullptr && root[0] != '\0') ? root : "runs";
}

absl::StatusOr<std::string> ResolveJobDir(const std::string& job, const std::string& job_root) {
  std::error_code ec;
  auto is_job_dir = [&](const fs::path& p) {
    return fs::is_directory(p, ec) &&
           (fs::exists(p / "submit.json", ec) || fs::exists(p / "job.yaml", ec));
  };
  if (job.empty()) return absl::InvalidArgumentError("no job given");
  if (job.find('/') != std::string::npos || job == "." || job == "..") {
    if (is_job_dir(job)) return fs::absolute(job, ec).lexically_normal().string();
    return absl::NotFoundError(
        absl::StrCat("'", job, "' is not a job directory (no submit.json or job.yaml)"));
  }
  fs::path under_root = fs::path(job_root) / job;
  if (is_job_dir(under_root)) return fs::absolute(under_root, ec).lexically_normal().string();
  if (is_job_dir(job)) return fs::absolute(job, ec).lexically_normal().string();
  return absl::NotFoundError(absl::StrCat("no job '", job, "' in ", job_root,
                                          " (set DLAUNCH_JOB_ROOT or pass the job directory)"));
}

std::vector<std::string> ListJobDirs(const std::string& job_root) {
  struct Entry {
    std::string key;
    std::string path;
  };
  std::vector<Entry> entries;
  std::error_code ec;
  for (fs::directory_iterator it(job_root, ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->is_directory(ec)) continue;
    std::string key;
    absl::StatusOr<std::string> text = ReadFile((it->path() / "submit.json").string());
    if (text.ok()) {
      absl::StatusOr<SubmitRecord> rec = ParseSubmitRecord(*text);
      if (rec.ok()) key = rec->submit_time;
    }
    if (key.empty()) {
      struct stat st;
      if (::stat(it->path().c_str(), &st) != 0) continue;
      key = absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::FromTimeT(st.st_mtime),
                             absl::UTCTimeZone());
    }
    entries.push_back({key, it->path().string()});
  }
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.key != b.key ? a.key > b.key : a.path > b.path;
  });
  std::vector<std::string> out;
  for (auto& e : entries) out.push_back(std::move(e.path));
  return out;
}

}  // namespace dlaunch
