// Solver options: one table of named options from which the command line, the REPL and FMU
// parameters are all built (SUNDIALS: every option is also a string key).
//
// A row of the table names the option three ways -- `key` (REPL, FMU, files: "t_end"), `flag`
// (command line: "--t-end") -- and gives its type, unit, help text and valid range; its default is
// the value in a default-constructed SolverOptions, so defaults are written exactly once (below).
// set_option() parses and checks a value from text, validate() checks the options together.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <variant>

namespace mbs::rt {

struct CompiledModel;

// The time integrators, in the order of their names in option_table(). `rk4` is accepted as a
// name of rk44 (SolverKind::Rk4 is the same value).
enum class SolverKind : uint8_t {
  GenAlpha,
  Newmark,
  Trapezoidal,
  Euler,
  Midpoint,
  Rk33,
  Rk44,
  Rk6,
  Ode23,
  Dopri5,
  Rk4 = Rk44,
};
// True for the explicit Runge-Kutta family.
inline bool is_explicit(SolverKind k) {
  return k >= SolverKind::Euler;
}
// True for the embedded pairs with automatic step size (ode23, dopri5).
inline bool is_adaptive(SolverKind k) {
  return k == SolverKind::Ode23 || k == SolverKind::Dopri5;
}

// What a non-finite value (NaN, Inf) in a column of the result does: stop the run as a solver
// failure (the row is not written), or warn once and write it.
enum class NonFiniteAction : uint8_t { Error, Warn };

struct SolverOptions {
  double t_end = 1.0;  // end time [s]; the run starts at the model's time (v0)
  double h = 1e-3;     // step size [s]; results are on the grid t0 + n h
  SolverKind solver = SolverKind::GenAlpha;
  double rho_inf = 0.9;          // generalized-alpha spectral radius at infinity, in [0, 1]
  double rtol = 1e-8;            // Newton: relative tolerance on the integrated variables
  double atol = 1e-10;           // Newton: absolute tolerance on the integrated variables
  int32_t newton_max_iter = 25;  // Newton iterations per step attempt
  double h_min = 0.0;            // smallest step when halving; 0 = automatic, see effective_h_min()
  int32_t output_every = 1;      // observer every Nth step; 0 = only first and last point
  bool initial_accelerations = true;  // solve for consistent qdd, yd, z at the start
  double newmark_beta = 0.25;         // Newmark's beta (newmark only)
  double newmark_gamma = 0.5;         // Newmark's gamma (newmark only)
  bool index2 = false;                // newmark/trapezoidal: velocity-level (index-2) constraints
  bool modified_newton = true;        // keep the Newton matrix while the contraction is good
  double h_max = 0.0;                 // adaptive methods: largest step; 0 = h
  double step_safety = 0.9;           // adaptive methods: safety factor on the optimal step
  double step_max_increase = 2.0;     // adaptive methods: largest factor of step increase
  bool ignore_constraints = false;    // explicit methods: drop algebraic equations (z = 0)
  int32_t load_steps = 10;            // static solver: number of load steps
  int32_t verbosity = 0;              // 0 quiet, 1 steps, 2 Newton iterations, 3 everything
  NonFiniteAction nonfinite = NonFiniteAction::Error;  // a NaN or Inf in a written column
  // Rejected step attempts (halvings, error-test rejections) allowed in one interval of the
  // output grid before the run fails (TooManyRejections).
  int32_t max_rejections = 1000;
  // The run has diverged when a state component (q, der(q), y; the static solver: q, y, z)
  // exceeds this in magnitude.
  double divergence_limit = 1e100;
  // Events (when-equations): an event time is located to event_tolerance * max(1, |t|); a run
  // fails as chattering after chatter_limit events in a row, each within 100 event tolerances
  // of the one before.
  double event_tolerance = 1e-12;
  int32_t chatter_limit = 100;

  // h_min with the automatic value resolved: 1e-12 * max(1, |t_end|), so that t + h_min still
  // differs from t by some 10^4 units in the last place over the whole run, but at most h / 1024
  // so that a failed step can always be halved ten times. (Independently of h_min, halving stops
  // where t + h can no longer be told from t.)
  double effective_h_min() const;
};

enum class OptionType : uint8_t { Real, Integer, Boolean, Choice };

struct OptionSpec {
  using Field =
      std::variant<double SolverOptions::*, int32_t SolverOptions::*, bool SolverOptions::*,
                   SolverKind SolverOptions::*, NonFiniteAction SolverOptions::*>;
  std::string_view key;   // "t_end"
  std::string_view flag;  // "--t-end"
  OptionType type;
  std::string_view unit;  // "s", or empty
  std::string_view help;
  Field field;
  // Valid range for Real and Integer values (inclusive unless *_open).
  double min = -1e308, max = 1e308;
  bool min_open = false, max_open = false;
  std::span<const std::string_view> choices = {};  // Choice: names in enum order
};

// All options, in the order they are documented and shown in --help.
std::span<const OptionSpec> option_table();

// Finds an option by key ("t_end"), by flag ("--t-end") or by key with dashes ("t-end").
const OptionSpec* find_option(std::string_view name);

// Parses `value` and stores it. Returns an error message (naming the option, the value and what
// was expected) or nullopt on success; on error `options` is unchanged.
std::optional<std::string> set_option(SolverOptions& options, std::string_view name,
                                      std::string_view value);

// The option's current value as text that set_option() reads back to the same value.
std::string get_option(const SolverOptions& options, const OptionSpec& spec);

// A Real or Integer option's value as a number (NaN for the other types).
double option_number(const SolverOptions& options, const OptionSpec& spec);

// The default value as text (from a default-constructed SolverOptions).
std::string default_text(const OptionSpec& spec);

// Checks the options together (ranges, h_min < h, tolerances not both zero, a step that time can
// resolve: h >= kMinStepUlps * eps * max(1, |t_end|)). Returns an error message or nullopt.
std::optional<std::string> validate(const SolverOptions& options);

// A model's experiment annotation (CompiledModel::experiment_*, NaN where not given; Modelica
// 3.6, section 18.4) as the defaults of a run; an option whose key is in `given` (set by the user
// on the command line, in a study file or in the REPL) keeps its value (docs/language.md, "The
// experiment annotation"):
//   StopTime  -> t_end;
//   Interval  -> the result grid, unless h or output_every is given: ode23 and dopri5 write a
//                row every h, so h = Interval (output_every = 1); a fixed-step method keeps a step
//                no longer than its own, h = Interval / n with n = ceil(Interval / h), and writes
//                every n-th step (output_every = n);
//   Tolerance -> rtol of ode23 and dopri5 (the relative tolerance of their step error; the
//                other methods' rtol is Newton's tolerance, and their step is fixed).
// Returns what it set, as "key = value" items for -v ("" when nothing).
std::string apply_experiment(const CompiledModel& model, SolverOptions& options,
                             const std::set<std::string>& given);

// The smallest step validate() accepts, in units of eps * max(1, |t_end|): t + h then differs
// from t by at least this many units in the last place everywhere on [0, t_end], the step can be
// halved about ten times before t + h/2^k is lost in rounding, and 1/h^2 (the Newton matrix of
// an implicit method scales position rows by it) stays far from overflow.
inline constexpr double kMinStepUlps = 4096.0;

std::string_view solver_name(SolverKind kind);

// A table of all options (flag, default, unit, help) for documentation and `--help`.
std::string format_option_table();

}  // namespace mbs::rt
