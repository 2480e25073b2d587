#include "runtime/solvers/Options.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "runtime/io/Suggest.h"
#include "runtime/model/CompiledModel.h"

namespace mbs::rt {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr std::array<std::string_view, 10> kSolverNames = {
    "gen-alpha", "newmark", "trapezoidal", "euler", "midpoint",
    "rk33",      "rk44",    "rk6",         "ode23", "dopri5"};

constexpr std::array<std::string_view, 2> kNonFiniteNames = {"error", "warn"};

const std::array<OptionSpec, 25> kOptions = {{
    {.key = "t_end",
     .flag = "--t-end",
     .type = OptionType::Real,
     .unit = "s",
     .help = "end time of the simulation (it starts at the model's start time)",
     .field = &SolverOptions::t_end,
     .min = -kInf,
     .max = kInf,
     .min_open = true,
     .max_open = true},
    {.key = "h",
     .flag = "--step",
     .type = OptionType::Real,
     .unit = "s",
     .help = "time step; results are on the grid t0 + n*h (the last step ends at t_end)",
     .field = &SolverOptions::h,
     .min = 0.0,
     .max = kInf,
     .min_open = true,
     .max_open = true},
    {.key = "solver",
     .flag = "--solver",
     .type = OptionType::Choice,
     .unit = "",
     .help = "time integrator: gen-alpha, newmark, trapezoidal (implicit, DAEs); euler, "
             "midpoint, rk33, rk44 (also rk4), rk6 (explicit, fixed step); ode23, dopri5 "
             "(explicit, automatic step)",
     .field = &SolverOptions::solver,
     .choices = kSolverNames},
    {.key = "rho_inf",
     .flag = "--rho-inf",
     .type = OptionType::Real,
     .unit = "",
     .help = "generalized-alpha: spectral radius at infinity (1 = no numerical damping)",
     .field = &SolverOptions::rho_inf,
     .min = 0.0,
     .max = 1.0},
    {.key = "rtol",
     .flag = "--rtol",
     .type = OptionType::Real,
     .unit = "",
     .help = "implicit and static solvers: Newton's relative tolerance on the update of q, y "
             "and z; ode23, dopri5: relative tolerance of the step error",
     .field = &SolverOptions::rtol,
     .min = 0.0,
     .max = 1.0},
    {.key = "atol",
     .flag = "--atol",
     .type = OptionType::Real,
     .unit = "",
     .help = "implicit and static solvers: Newton's absolute tolerance on the update of q, y "
             "and z; ode23, dopri5: absolute tolerance of the step error",
     .field = &SolverOptions::atol,
     .min = 0.0,
     .max = kInf,
     .max_open = true},
    {.key = "newton_max_iter",
     .flag = "--newton-max-iter",
     .type = OptionType::Integer,
     .unit = "",
     .help = "Newton: iterations per step attempt before the step is halved",
     .field = &SolverOptions::newton_max_iter,
     .min = 1.0,
     .max = 1000.0},
    {.key = "h_min",
     .flag = "--h-min",
     .type = OptionType::Real,
     .unit = "s",
     .help = "smallest step when a failed step is halved; 0 = min(1e-12*max(1,|t_end|), h/1024)",
     .field = &SolverOptions::h_min,
     .min = 0.0,
     .max = kInf,
     .max_open = true},
    {.key = "output_every",
     .flag = "--output-every",
     .type = OptionType::Integer,
     .unit = "",
     .help = "write every Nth step to the result file (0 = only the first and the last "
             "point); --outputs chooses its columns",
     .field = &SolverOptions::output_every,
     .min = 0.0,
     .max = 2147483647.0},
    {.key = "initial_accelerations",
     .flag = "--initial-accelerations",
     .type = OptionType::Boolean,
     .unit = "",
     .help = "solve for consistent initial accelerations, ODE1 derivatives and algebraic "
             "variables before the first step",
     .field = &SolverOptions::initial_accelerations},
    {.key = "newmark_beta",
     .flag = "--newmark-beta",
     .type = OptionType::Real,
     .unit = "",
     .help = "newmark: the parameter beta (1/4 with gamma = 1/2 is the trapezoidal rule)",
     .field = &SolverOptions::newmark_beta,
     .min = 0.0,
     .max = 0.5,
     .min_open = true},
    {.key = "newmark_gamma",
     .flag = "--newmark-gamma",
     .type = OptionType::Real,
     .unit = "",
     .help = "newmark: the parameter gamma (> 1/2 adds numerical damping)",
     .field = &SolverOptions::newmark_gamma,
     .min = 0.5,
     .max = 1.0},
    {.key = "index2",
     .flag = "--index2",
     .type = OptionType::Boolean,
     .unit = "",
     .help = "newmark, trapezoidal: enforce constraints at velocity level (index 2) instead of "
             "position level (index 3)",
     .field = &SolverOptions::index2},
    {.key = "modified_newton",
     .flag = "--modified-newton",
     .type = OptionType::Boolean,
     .unit = "",
     .help = "implicit methods: keep the Newton matrix while the iteration contracts well "
             "(false: a new matrix every iteration)",
     .field = &SolverOptions::modified_newton},
    {.key = "h_max",
     .flag = "--h-max",
     .type = OptionType::Real,
     .unit = "s",
     .help = "ode23, dopri5: largest step; 0 = --step (which is also the initial step)",
     .field = &SolverOptions::h_max,
     .min = 0.0,
     .max = kInf,
     .max_open = true},
    {.key = "step_safety",
     .flag = "--step-safety",
     .type = OptionType::Real,
     .unit = "",
     .help = "ode23, dopri5: safety factor on the optimal step size",
     .field = &SolverOptions::step_safety,
     .min = 0.0,
     .max = 1.0,
     .min_open = true},
    {.key = "step_max_increase",
     .flag = "--step-max-increase",
     .type = OptionType::Real,
     .unit = "",
     .help = "ode23, dopri5: largest factor by which one step may exceed the previous",
     .field = &SolverOptions::step_max_increase,
     .min = 1.0,
     .max = kInf,
     .max_open = true},
    {.key = "ignore_constraints",
     .flag = "--ignore-constraints",
     .type = OptionType::Boolean,
     .unit = "",
     .help = "explicit methods: drop the algebraic equations and set algebraic variables to 0 "
             "(the result is then not a solution of the model)",
     .field = &SolverOptions::ignore_constraints},
    {.key = "load_steps",
     .flag = "--load-steps",
     .type = OptionType::Integer,
     .unit = "",
     .help = "static solver: number of load steps from the start state to full load",
     .field = &SolverOptions::load_steps,
     .min = 1.0,
     .max = 1e6},
    {.key = "verbosity",
     .flag = "--solver-verbosity",
     .type = OptionType::Integer,
     .unit = "",
     .help = "solver output on stderr: 0 none, 1 steps, 2 Newton iterations, 3 everything",
     .field = &SolverOptions::verbosity,
     .min = 0.0,
     .max = 3.0},
    {.key = "nonfinite",
     .flag = "--nonfinite",
     .type = OptionType::Choice,
     .unit = "",
     .help = "a NaN or Inf in a column of the result: error (stop as a solver failure naming "
             "the variable and its equation; the rows before it are kept) or warn (one warning, "
             "the values are written)",
     .field = &SolverOptions::nonfinite,
     .choices = kNonFiniteNames},
    {.key = "max_rejections",
     .flag = "--max-rejections",
     .type = OptionType::Integer,
     .unit = "",
     .help = "rejected step attempts (halvings, error-test rejections, load-step halvings) "
             "allowed in one interval of the output grid before the run fails",
     .field = &SolverOptions::max_rejections,
     .min = 1.0,
     .max = 2147483647.0},
    {.key = "event_tolerance",
     .flag = "--event-tolerance",
     .type = OptionType::Real,
     .unit = "",
     .help = "events: the time of an event is located to this times max(1, |t|)",
     .field = &SolverOptions::event_tolerance,
     .min = 1e-15,
     .max = 1e-3},
    {.key = "chatter_limit",
     .flag = "--chatter-limit",
     .type = OptionType::Integer,
     .unit = "",
     .help = "events: the run fails as chattering after this many events in a row, each within "
             "100 event tolerances of the one before",
     .field = &SolverOptions::chatter_limit,
     .min = 1.0,
     .max = 2147483647.0},
    {.key = "divergence_limit",
     .flag = "--divergence-limit",
     .type = OptionType::Real,
     .unit = "",
     .help = "the run has diverged when a state component (q, der(q), y) exceeds this in "
             "magnitude",
     .field = &SolverOptions::divergence_limit,
     .min = 0.0,
     .max = kInf,
     .min_open = true,
     .max_open = true},
}};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool iequal(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

std::string format_real(double x) {
  std::array<char, 32> buf{};
  auto [end, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), x);
  return std::string(buf.data(), end);
}

std::string format_bound(double x) {
  if (x == kInf) return "inf";
  if (x == -kInf) return "-inf";
  return format_real(x);
}

std::string range_text(const OptionSpec& s) {
  return fmt::format("{}{}, {}{}", s.min_open ? '(' : '[', format_bound(s.min), format_bound(s.max),
                     s.max_open ? ')' : ']');
}

std::string name_of(const OptionSpec& s) {
  return fmt::format("{} ({})", s.flag, s.key);
}

bool in_range(const OptionSpec& s, double x) {
  const bool lo = s.min_open ? x > s.min : x >= s.min;
  const bool hi = s.max_open ? x < s.max : x <= s.max;
  return lo && hi;
}

std::string normalized_key(std::string_view name) {
  while (!name.empty() && name.front() == '-') name.remove_prefix(1);
  std::string key(name);
  std::replace(key.begin(), key.end(), '-', '_');
  return key;
}

// The index of a Choice option's value, and setting it by index.
size_t choice_index(const SolverOptions& o, const OptionSpec& s) {
  return std::visit(
      [&](auto field) -> size_t {
        using T = std::remove_reference_t<decltype(o.*field)>;
        if constexpr (std::is_enum_v<T>) {
          return static_cast<size_t>(o.*field);
        } else {
          return 0;
        }
      },
      s.field);
}

void set_choice(SolverOptions& o, const OptionSpec& s, size_t i) {
  std::visit(
      [&](auto field) {
        using T = std::remove_reference_t<decltype(o.*field)>;
        if constexpr (std::is_enum_v<T>) o.*field = static_cast<T>(i);
      },
      s.field);
}

std::optional<std::string> parse_real(const OptionSpec& s, std::string_view text, double& out) {
  std::string_view t = text;
  if (!t.empty() && t.front() == '+') t.remove_prefix(1);
  double x = 0.0;
  auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), x);
  if (t.empty() || ec != std::errc() || end != t.data() + t.size() || !std::isfinite(x)) {
    return fmt::format("option {}: '{}' is not a finite number", name_of(s), text);
  }
  out = x;
  return std::nullopt;
}

}  // namespace

double SolverOptions::effective_h_min() const {
  if (h_min > 0.0) return h_min;
  return std::min(1e-12 * std::max(1.0, std::fabs(t_end)), h / 1024.0);
}

std::span<const OptionSpec> option_table() {
  return kOptions;
}

std::string_view solver_name(SolverKind kind) {
  return kSolverNames[static_cast<size_t>(kind)];
}

const OptionSpec* find_option(std::string_view name) {
  const std::string key = normalized_key(trim(name));
  for (const OptionSpec& s : kOptions) {
    if (s.key == key || s.flag == name || normalized_key(s.flag) == key) return &s;
  }
  return nullptr;
}

std::optional<std::string> set_option(SolverOptions& options, std::string_view name,
                                      std::string_view value) {
  const OptionSpec* spec = find_option(name);
  if (!spec) {
    const std::string key = normalized_key(trim(name));
    const OptionSpec* best = nullptr;
    size_t best_d = 3;  // suggest only close matches
    for (const OptionSpec& s : kOptions) {
      const bool prefix = key.size() >= 3 && (key.starts_with(s.key) || s.key.starts_with(key));
      const size_t d = prefix ? 0 : edit_distance(key, s.key);
      if (d < best_d) best_d = d, best = &s;
    }
    std::string msg = fmt::format("unknown solver option '{}'", name);
    if (best) msg += fmt::format("; did you mean '{}' ({})?", best->key, best->flag);
    return msg;
  }
  const OptionSpec& s = *spec;
  const std::string_view text = trim(value);
  switch (s.type) {
    case OptionType::Real: {
      double x = 0.0;
      if (auto err = parse_real(s, text, x)) return err;
      if (!in_range(s, x)) {
        return fmt::format("option {}: {} is outside the valid range {}", name_of(s), text,
                           range_text(s));
      }
      options.*std::get<double SolverOptions::*>(s.field) = x;
      return std::nullopt;
    }
    case OptionType::Integer: {
      std::string_view t = text;
      if (!t.empty() && t.front() == '+') t.remove_prefix(1);
      int64_t x = 0;
      auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), x);
      if (t.empty() || ec != std::errc() || end != t.data() + t.size()) {
        return fmt::format("option {}: '{}' is not an integer", name_of(s), text);
      }
      if (!in_range(s, static_cast<double>(x))) {
        return fmt::format("option {}: {} is outside the valid range {}", name_of(s), text,
                           range_text(s));
      }
      options.*std::get<int32_t SolverOptions::*>(s.field) = static_cast<int32_t>(x);
      return std::nullopt;
    }
    case OptionType::Boolean: {
      static constexpr std::array<std::string_view, 4> yes = {"true", "1", "yes", "on"};
      static constexpr std::array<std::string_view, 4> no = {"false", "0", "no", "off"};
      bool& field = options.*std::get<bool SolverOptions::*>(s.field);
      if (std::any_of(yes.begin(), yes.end(), [&](auto w) { return iequal(text, w); })) {
        field = true;
        return std::nullopt;
      }
      if (std::any_of(no.begin(), no.end(), [&](auto w) { return iequal(text, w); })) {
        field = false;
        return std::nullopt;
      }
      return fmt::format("option {}: '{}' is not a truth value (use true or false)", name_of(s),
                         text);
    }
    case OptionType::Choice: {
      // `rk4` stays a name of rk44
      const bool solver = std::holds_alternative<SolverKind SolverOptions::*>(s.field);
      const std::string_view choice =
          solver && iequal(text, "rk4") ? std::string_view("rk44") : text;
      for (size_t i = 0; i < s.choices.size(); ++i) {
        if (iequal(choice, s.choices[i])) {
          set_choice(options, s, i);
          return std::nullopt;
        }
      }
      return fmt::format("option {}: '{}' is not one of: {}", name_of(s), text,
                         fmt::join(s.choices, ", "));
    }
  }
  return fmt::format("option {}: unsupported type", name_of(s));
}

std::string get_option(const SolverOptions& options, const OptionSpec& s) {
  switch (s.type) {
    case OptionType::Real:
      return format_real(options.*std::get<double SolverOptions::*>(s.field));
    case OptionType::Integer:
      return std::to_string(options.*std::get<int32_t SolverOptions::*>(s.field));
    case OptionType::Boolean:
      return options.*std::get<bool SolverOptions::*>(s.field) ? "true" : "false";
    case OptionType::Choice:
      return std::string(s.choices[choice_index(options, s)]);
  }
  return {};
}

double option_number(const SolverOptions& options, const OptionSpec& s) {
  if (s.type == OptionType::Real) return options.*std::get<double SolverOptions::*>(s.field);
  if (s.type == OptionType::Integer) return options.*std::get<int32_t SolverOptions::*>(s.field);
  return std::numeric_limits<double>::quiet_NaN();
}

std::string default_text(const OptionSpec& spec) {
  return get_option(SolverOptions{}, spec);
}

std::string apply_experiment(const CompiledModel& model, SolverOptions& o,
                             const std::set<std::string>& given) {
  const double stop_time = model.experiment_stop_time, interval = model.experiment_interval,
               tolerance = model.experiment_tolerance;
  std::string set;
  auto note = [&](const char* key, const std::string& value) {
    set += (set.empty() ? "" : ", ") + std::string(key) + " = " + value;
  };
  if (std::isfinite(stop_time) && !given.count("t_end")) {
    o.t_end = stop_time;
    note("t_end", fmt::format("{}", stop_time));
  }
  if (std::isfinite(interval) && interval > 0.0 && !given.count("h") &&
      !given.count("output_every")) {
    if (is_adaptive(o.solver)) {
      o.h = interval;
      o.output_every = 1;
      note("h", fmt::format("{}", interval));
    } else {
      // the smallest number of steps per interval that keeps the step at most the method's own
      // (a relative 1e-9 spares an extra step where Interval is a multiple of h up to rounding)
      const double n = std::max(1.0, std::ceil(interval / o.h * (1.0 - 1e-9)));
      if (n <= 1e6) {
        o.h = interval / n;
        o.output_every = static_cast<int32_t>(n);
        note("h", fmt::format("{}", o.h));
        note("output_every", fmt::format("{}", o.output_every));
      }
    }
  }
  if (std::isfinite(tolerance) && tolerance > 0.0 && is_adaptive(o.solver) &&
      !given.count("rtol")) {
    o.rtol = tolerance;
    note("rtol", fmt::format("{}", tolerance));
  }
  return set;
}

std::optional<std::string> validate(const SolverOptions& o) {
  for (const OptionSpec& s : kOptions) {
    double x = 0.0;
    if (s.type == OptionType::Real) {
      x = o.*std::get<double SolverOptions::*>(s.field);
      if (!std::isfinite(x)) return fmt::format("option {}: {} is not finite", name_of(s), x);
    } else if (s.type == OptionType::Integer) {
      x = o.*std::get<int32_t SolverOptions::*>(s.field);
    } else {
      continue;
    }
    if (!in_range(s, x)) {
      return fmt::format("option {}: {} is outside the valid range {}", name_of(s),
                         get_option(o, s), range_text(s));
    }
  }
  if (static_cast<size_t>(o.solver) >= kSolverNames.size())
    return "option --solver: invalid solver";
  if (static_cast<size_t>(o.nonfinite) >= kNonFiniteNames.size())
    return "option --nonfinite: invalid value";
  // A step that time cannot resolve, or whose 1/h^2 overflows the Newton matrix, would fail
  // later with a misleading message (a singular matrix blamed on a multiplier): refuse it here.
  const double h_floor =
      kMinStepUlps * std::numeric_limits<double>::epsilon() * std::max(1.0, std::fabs(o.t_end));
  if (!(o.h >= h_floor)) {
    return fmt::format(
        "option --step (h) = {} is too small: time cannot resolve it over a run to t = {} (at t "
        "the spacing of doubles is eps*|t|; t + h would be t or nearly so, and 1/h^2 in the "
        "Newton matrix {}); the smallest step is {:.3g} = {} * eps * max(1, |t_end|)",
        format_real(o.h), format_real(o.t_end),
        1.0 / (o.h * o.h) > 1e300 ? "overflows" : "is ill-conditioned", h_floor, kMinStepUlps);
  }
  // the same floor for the other step sizes (--h-max 1e-300 made dopri5 run without end)
  if (o.h_max > 0.0 && !(o.h_max >= h_floor)) {
    return fmt::format(
        "option --h-max (h_max) = {} is too small: time cannot resolve it over a run to t = {}; "
        "the smallest step is {:.3g} = {} * eps * max(1, |t_end|) (0 takes --step)",
        format_real(o.h_max), format_real(o.t_end), h_floor, kMinStepUlps);
  }
  if (o.rtol == 0.0 && o.atol == 0.0) {
    return "options --rtol and --atol are both 0: the Newton iteration could never converge";
  }
  if (!(o.effective_h_min() < o.h)) {
    return fmt::format("option --h-min (h_min) = {} must be smaller than the step --step (h) = {}",
                       format_real(o.effective_h_min()), format_real(o.h));
  }
  return std::nullopt;
}

std::string format_option_table() {
  std::string out = fmt::format("{:<26} {:<22} {:<10} {:<5} {}\n", "flag", "key", "default", "unit",
                                "description");
  for (const OptionSpec& s : kOptions) {
    out += fmt::format("{:<26} {:<22} {:<10} {:<5} {}\n", s.flag, s.key, default_text(s),
                       s.unit.empty() ? "-" : s.unit, s.help);
  }
  return out;
}

}  // namespace mbs::rt
