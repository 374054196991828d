#include "common/did_you_mean.h"

#include <algorithm>
#include <cctype>

namespace dlaunch {

int EditDistance(std::string_view a, std::string_view b) {
  const size_t n = a.size();
  const size_t m = b.size();
  // d[i][j] = distance between a[0..i) and b[0..j).
  std::vector<std::vector<int>> d(n + 1, std::vector<int>(m + 1, 0));
  for (size_t i = 0; i <= n; ++i) d[i][0] = static_cast<int>(i);
  for (size_t j = 0; j <= m; ++j) d[0][j] = static_cast<int>(j);
  for (size_t i = 1; i <= n; ++i) {
    for (size_t j = 1; j <= m; ++j) {
      const int cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[n][m];
}

std::string ClosestMatch(std::string_view word, const std::vector<std::string>& candidates) {
  std::string lowered(word);
  std::transform(lowered.begin(), lowered.end(), lowered.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  std::string best;
  int best_distance = 0;
  for (const std::string& candidate : candidates) {
    // Case slips ("Nodes") are the most common typo of all, so compare case-insensitively.
    const int distance = EditDistance(lowered, candidate);
    const int longer = static_cast<int>(std::max(word.size(), candidate.size()));
    if (distance > 2 || distance * 3 > longer) continue;
    if (best.empty() || distance < best_distance) {
      best = candidate;
      best_distance = distance;
    }
  }
  return best;
}

}  // namespace dlaunch
