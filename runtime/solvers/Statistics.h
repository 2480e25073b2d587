// One statistics record for every integrator, printed as a table for people and as CSV for
// scripts (SUNDIALS' one record, one printer).
#pragma once

#include <cstdint>
#include <limits>
#include <string>

namespace mbs::rt {

// X(member, label): the fields in print order. Counters are int64_t, the rest double.
#define MBS_STATISTICS_COUNTERS(X)                \
  X(steps, "steps")                               \
  X(rejected_steps, "rejected steps")             \
  X(newton_iterations, "Newton iterations")       \
  X(residual_evaluations, "residual evaluations") \
  X(jacobian_evaluations, "Jacobian evaluations") \
  X(factorizations, "factorizations")             \
  X(linear_solves, "linear solves")               \
  X(events, "events")

#define MBS_STATISTICS_REALS(X)      \
  X(h_smallest, "smallest step [s]") \
  X(h_largest, "largest step [s]")   \
  X(wall_time, "wall time [s]")

struct Statistics {
#define MBS_X(name, label) int64_t name = 0;
  MBS_STATISTICS_COUNTERS(MBS_X)
#undef MBS_X
  double h_smallest = std::numeric_limits<double>::infinity();  // of accepted steps
  double h_largest = 0.0;
  double wall_time = 0.0;  // initialize() and run(), seconds

  void record_accepted_step(double h) {
    ++steps;
    if (h < h_smallest) h_smallest = h;
    if (h > h_largest) h_largest = h;
  }
};

// "steps                   1000\n..." one line per field, `title` on top if not empty.
std::string format_statistics_table(const Statistics& s, const std::string& title = "");
// The CSV header "steps,rejected_steps,..." and one row of values, without line ends.
std::string statistics_csv_header();
std::string format_statistics_csv(const Statistics& s);

}  // namespace mbs::rt
