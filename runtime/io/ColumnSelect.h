// Choosing the columns of a result (`mbsc --outputs`, the REPL's save, a library caller): names
// or globs in which `*` stands for any run of characters and `?` for one character; everything
// else, brackets and parentheses included, is literal (`body?.r_0[*]`, `der(j1.phi)`, `j1.*`).
#pragma once

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace mbs::rt {

// A pattern that matches no column: the message names it and, when one is close, the column
// that was perhaps meant.
class ColumnSelectError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// True when `name` matches the glob `pattern` (whole name).
bool glob_match(std::string_view pattern, std::string_view name);

// The indices of `names` that some pattern matches, increasing (each once, in the names' order).
// Every pattern must match at least one name; else throws ColumnSelectError ("no result column
// 'j1.phl'; did you mean 'j1.phi'?", "the pattern 'j9.*' matches no result column; did you mean
// 'j1.*'?").
std::vector<int32_t> select_columns(std::span<const std::string> names,
                                    std::span<const std::string> patterns);

}  // namespace mbs::rt
