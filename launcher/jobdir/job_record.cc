#include "launcher/jobdir/job_record.h"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <optional>

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "common/file_io.h"
#include "launcher/jobdir/job_index.h"

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

namespace {

// What a path given for a job holds, as far as this user can tell.
enum class JobDirProbe { kJob, kNone, kDenied };

JobDirProbe ProbeJobDir(const fs::path& p) {
  struct stat st;
  // A path this user cannot even look up says nothing of whether the job exists.
  if (::stat(p.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return JobDirProbe::kNone;
  // A directory this user may not list or enter: whether it holds a job cannot be seen, and
  // saying "no job" would send its user looking elsewhere.
  if (::access(p.c_str(), R_OK | X_OK) != 0 && errno == EACCES) return JobDirProbe::kDenied;
  for (const char* name : {"submit.json", "job.yaml"}) {
    if (::stat((p / name).c_str(), &st) == 0) return JobDirProbe::kJob;
    if (errno == EACCES) return JobDirProbe::kDenied;
  }
  return JobDirProbe::kNone;
}

// "user alice, drwx------" for the refusal, or what of it can be found.
std::string OwnerAndMode(const fs::path& p) {
  struct stat st;
  if (::stat(p.c_str(), &st) != 0) return "its owner only";
  std::string owner = absl::StrCat("uid ", st.st_uid);
  struct passwd pw;
  struct passwd* found = nullptr;
  char buf[1024];
  if (::getpwuid_r(st.st_uid, &pw, buf, sizeof(buf), &found) == 0 && found != nullptr) {
    owner = absl::StrCat("user ", found->pw_name);
  }
  std::string mode = "d";
  const char* rwx = "rwxrwxrwx";
  for (int bit = 0; bit < 9; ++bit) mode += (st.st_mode & (0400 >> bit)) ? rwx[bit] : '-';
  return absl::StrCat(owner, ", ", mode);
}

absl::Status Denied(const std::string& job, const fs::path& p) {
  return absl::PermissionDeniedError(absl::StrCat(
      "job '", job, "' exists but you may not read it: ", p.string(), " belongs to ",
      OwnerAndMode(p), " (ask its owner, or pass a job of yours)"));
}

}  // namespace

absl::StatusOr<std::string> ResolveJobDir(const std::string& job, const std::string& job_root) {
  std::error_code ec;
  if (job.empty()) return absl::InvalidArgumentError("no job given");
  // The first place that holds the job, or refuses this user, answers.
  auto resolve = [&](const fs::path& p) -> std::optional<absl::StatusOr<std::string>> {
    switch (ProbeJobDir(p)) {
      case JobDirProbe::kJob:
        return fs::absolute(p, ec).lexically_normal().string();
      case JobDirProbe::kDenied:
        return Denied(job, p);
      case JobDirProbe::kNone:
        break;
    }
    return std::nullopt;
  };
  if (job.find('/') != std::string::npos || job == "." || job == "..") {
    if (auto found = resolve(job)) return *found;
    return absl::NotFoundError(
        absl::StrCat("'", job, "' is not a job directory (no submit.json or job.yaml)"));
  }
  if (auto found = resolve(fs::path(job_root) / job)) return *found;
  if (auto found = resolve(job)) return *found;
  const JobIndex index(JobIndex::DefaultRoot());
  if (absl::StatusOr<std::string> dir = index.Find(job); dir.ok()) {
    if (auto found = resolve(*dir)) return *found;
  }
  return absl::NotFoundError(absl::StrCat(
      "no job '", job, "' in ", job_root,
      index.root().empty() ? "" : absl::StrCat(" or in the job index ", index.root()),
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
