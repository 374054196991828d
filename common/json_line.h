// JsonLine: builds one flat JSON object (events.jsonl, metrics.jsonl, summary.json lines).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dlaunch {

class JsonLine {
 public:
  JsonLine& Add(const std::string& key, const std::string& value);
  JsonLine& Add(const std::string& key, const char* value) { return Add(key, std::string(value)); }
  JsonLine& Add(const std::string& key, int64_t value);
  JsonLine& Add(const std::string& key, int value) { return Add(key, static_cast<int64_t>(value)); }
  JsonLine& Add(const std::string& key, double value);
  JsonLine& Add(const std::string& key, bool value);
  JsonLine& AddRaw(const std::string& key, const std::string& json);  // value already JSON
  JsonLine& Add(const std::string& key, const std::vector<std::string>& values);
  std::string str() const { return "{" + body_ + "}"; }

 private:
  void Key(const std::string& key);
  std::string body_;
};

std::string JsonQuote(const std::string& s);

// Current time as RFC 3339 UTC with milliseconds.
std::string NowRfc3339();

}  // namespace dlaunch
