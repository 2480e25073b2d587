#include "runtime/io/ColumnSelect.h"

#include <algorithm>

#include "runtime/io/Suggest.h"

namespace mbs::rt {

bool glob_match(std::string_view pattern, std::string_view name) {
  // iterative matching with one backtrack point (the last `*`): linear in practice
  size_t p = 0, n = 0, star = std::string_view::npos, resume = 0;
  while (n < name.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == name[n])) {
      ++p;
      ++n;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      resume = n;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      n = ++resume;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

std::vector<int32_t> select_columns(std::span<const std::string> names,
                                    std::span<const std::string> patterns) {
  std::vector<char> chosen(names.size(), 0);
  for (const std::string& pattern : patterns) {
    const bool glob = pattern.find_first_of("*?") != std::string::npos;
    bool any = false;
    for (size_t i = 0; i < names.size(); ++i) {
      if (glob ? glob_match(pattern, names[i]) : pattern == names[i]) {
        chosen[i] = 1;
        any = true;
      }
    }
    if (any) continue;
    // a name: the nearest name; a glob: its literal start corrected to the nearest start of a
    // name, when the pattern then matches ('j9.*' -> 'j1.*')
    std::string meant;
    if (!glob) {
      meant = meant_name(pattern, std::vector<std::string>(names.begin(), names.end()));
    } else if (const size_t literal = pattern.find_first_of("*?"); literal > 0) {
      std::vector<std::string> starts;
      for (const std::string& n : names) {
        std::string start = n.substr(0, literal);
        if (std::find(starts.begin(), starts.end(), start) == starts.end())
          starts.push_back(std::move(start));
      }
      const std::string start = meant_name(pattern.substr(0, literal), starts);
      if (!start.empty()) {
        const std::string corrected = start + pattern.substr(literal);
        for (const std::string& n : names)
          if (glob_match(corrected, n)) {
            meant = corrected;
            break;
          }
      }
    }
    std::string message = glob ? "the pattern '" + pattern + "' matches no result column"
                               : "no result column '" + pattern + "'";
    if (!meant.empty()) message += "; did you mean '" + meant + "'?";
    throw ColumnSelectError(message);
  }
  std::vector<int32_t> indices;
  for (size_t i = 0; i < names.size(); ++i)
    if (chosen[i]) indices.push_back(static_cast<int32_t>(i));
  return indices;
}

}  // namespace mbs::rt
