#include "runtime/io/Suggest.h"

#include <algorithm>
#include <utility>

namespace mbs::rt {

size_t edit_distance(std::string_view a, std::string_view b) {
  // three rows of the dynamic programme: i - 2, i - 1, i
  std::vector<size_t> before(b.size() + 1), prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      cur[j] =
          std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        cur[j] = std::min(cur[j], before[j - 2] + 1);
    }
    std::swap(before, prev);
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string meant_name(std::string_view name, const std::vector<std::string>& candidates,
                       size_t slack) {
  auto near = nearest_names(name, candidates, 1);
  if (near.empty()) return "";
  const size_t d = edit_distance(name, near[0]);
  if (d > std::max(slack, name.size() / 3) || d >= name.size()) return "";
  return near[0];
}

std::vector<std::string> nearest_names(std::string_view name,
                                       const std::vector<std::string>& candidates, size_t count) {
  std::vector<std::pair<size_t, size_t>> ranked;  // distance, index
  for (size_t i = 0; i < candidates.size(); ++i)
    ranked.emplace_back(edit_distance(name, candidates[i]), i);
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<std::string> out;
  for (size_t k = 0; k < ranked.size() && k < count; ++k)
    out.push_back(candidates[ranked[k].second]);
  return out;
}

}  // namespace mbs::rt
