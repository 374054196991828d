#include "agent/workers/torch_error_file.h"

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include <fstream>
#include <regex>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace dlaunch {
namespace {

using google::protobuf::Struct;
using google::protobuf::Value;

const Value* Field(const Struct& s, const char* name) {
  auto it = s.fields().find(name);
  return it == s.fields().end() ? nullptr : &it->second;
}

// The last `File "...", line N, in f` of a Python traceback: where the exception was raised.
std::string InnermostFrame(absl::string_view callstack) {
  static const std::regex kFrame(R"re(^\s*File "([^"]+)", line (\d+), in (.+)$)re");
  std::string found;
  for (absl::string_view line : absl::StrSplit(callstack, '\n')) {
    std::smatch m;
    const std::string l(absl::StripTrailingAsciiWhitespace(line));
    if (std::regex_match(l, m, kFrame)) found = absl::StrCat(m[1].str(), ":", m[2].str(), ", in ", m[3].str());
  }
  return found;
}

// The exception line of a traceback, when the message itself is not given.
std::string LastNonEmptyLine(absl::string_view text) {
  std::string last;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (!line.empty()) last = std::string(line);
  }
  return last;
}

}  // namespace

std::string RankErrorFilePath(const std::string& job_dir, int rank) {
  return absl::StrCat(job_dir, "/errors/rank-", rank, ".json");
}

std::string SummarizeTorchErrorFile(absl::string_view json) {
  Struct root;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  if (!google::protobuf::util::JsonStringToMessage(std::string(json), &root, options).ok()) return "";
  const Value* message = Field(root, "message");
  if (message == nullptr) return "";
  if (message->has_string_value()) return LastNonEmptyLine(message->string_value());
  if (!message->has_struct_value()) return "";
  const Struct& m = message->struct_value();
  std::string what, callstack;
  if (const Value* v = Field(m, "message"); v != nullptr && v->has_string_value()) {
    what = LastNonEmptyLine(v->string_value());
  }
  if (const Value* extra = Field(m, "extraInfo"); extra != nullptr && extra->has_struct_value()) {
    if (const Value* cs = Field(extra->struct_value(), "py_callstack");
        cs != nullptr && cs->has_string_value()) {
      callstack = cs->string_value();
    }
  }
  if (what.empty()) what = LastNonEmptyLine(callstack);
  if (what.empty()) return "";
  const std::string frame = InnermostFrame(callstack);
  return frame.empty() ? what : absl::StrCat(what, " (at ", frame, ")");
}

std::string ReadTorchError(const std::string& job_dir, int rank) {
  std::ifstream in(RankErrorFilePath(job_dir, rank), std::ios::binary);
  if (!in) return "";
  std::string text(1 << 20, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  return SummarizeTorchErrorFile(text);
}

}  // namespace dlaunch
