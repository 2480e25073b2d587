#include "runtime/solvers/Statistics.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <iterator>
#include <string_view>

namespace mbs::rt {

namespace {
// An unset smallest step (no step taken) prints as 0 rather than inf.
double printable(double x) {
  return std::isfinite(x) ? x : 0.0;
}
}  // namespace

std::string format_statistics_table(const Statistics& s, const std::string& title) {
  std::string out;
  if (!title.empty()) out += title + "\n";
#define MBS_X(name, label) out += fmt::format("  {:<24}{:>14}\n", label, s.name);
  MBS_STATISTICS_COUNTERS(MBS_X)
#undef MBS_X
#define MBS_X(name, label) out += fmt::format("  {:<24}{:>14.6g}\n", label, printable(s.name));
  MBS_STATISTICS_REALS(MBS_X)
#undef MBS_X
  return out;
}

std::string statistics_csv_header() {
  static constexpr std::string_view names[] = {
#define MBS_X(name, label) #name,
      MBS_STATISTICS_COUNTERS(MBS_X) MBS_STATISTICS_REALS(MBS_X)
#undef MBS_X
  };
  return fmt::format("{}", fmt::join(names, ","));
}

std::string format_statistics_csv(const Statistics& s) {
  std::string out;
#define MBS_X(name, label) fmt::format_to(std::back_inserter(out), "{},", s.name);
  MBS_STATISTICS_COUNTERS(MBS_X)
#undef MBS_X
#define MBS_X(name, label) fmt::format_to(std::back_inserter(out), "{},", printable(s.name));
  MBS_STATISTICS_REALS(MBS_X)
#undef MBS_X
  out.pop_back();
  return out;
}

}  // namespace mbs::rt
