// The solver option table: defaults, parsing from text, validation and the CLI11 binding.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "runtime/solvers/Options.h"
#include "runtime/solvers/OptionsCli.h"

namespace mbs::rt {
namespace {

TEST(Options, Defaults) {
  const SolverOptions o;
  EXPECT_EQ(o.t_end, 1.0);
  EXPECT_EQ(o.h, 1e-3);
  EXPECT_EQ(o.solver, SolverKind::GenAlpha);
  EXPECT_EQ(o.rho_inf, 0.9);
  EXPECT_EQ(o.rtol, 1e-8);
  EXPECT_EQ(o.atol, 1e-10);
  EXPECT_EQ(o.newton_max_iter, 25);
  EXPECT_EQ(o.h_min, 0.0);
  EXPECT_EQ(o.effective_h_min(), 1e-12);
  EXPECT_EQ(o.output_every, 1);
  EXPECT_TRUE(o.initial_accelerations);
  EXPECT_FALSE(validate(o).has_value());
}

TEST(Options, TableIsCompleteAndConsistent) {
  std::set<std::string> keys, flags;
  for (const OptionSpec& s : option_table()) {
    EXPECT_TRUE(keys.insert(std::string(s.key)).second) << s.key;
    EXPECT_TRUE(flags.insert(std::string(s.flag)).second) << s.flag;
    EXPECT_EQ(s.flag.substr(0, 2), "--");
    EXPECT_FALSE(s.help.empty()) << s.key;
    // The default prints as text that parses back to the default.
    SolverOptions o;
    EXPECT_FALSE(set_option(o, s.key, default_text(s)).has_value()) << s.key;
    EXPECT_EQ(get_option(o, s), default_text(s));
  }
  EXPECT_EQ(keys, (std::set<std::string>{"t_end",
                                         "event_tolerance",
                                         "chatter_limit",
                                         "h",
                                         "solver",
                                         "rho_inf",
                                         "rtol",
                                         "atol",
                                         "newton_max_iter",
                                         "h_min",
                                         "output_every",
                                         "newmark_beta",
                                         "newmark_gamma",
                                         "index2",
                                         "modified_newton",
                                         "h_max",
                                         "step_safety",
                                         "step_max_increase",
                                         "ignore_constraints",
                                         "load_steps",
                                         "verbosity",
                                         "initial_accelerations",
                                         "nonfinite",
                                         "max_rejections",
                                         "divergence_limit"}));
  EXPECT_EQ(default_text(*find_option("h")), "0.001");
  EXPECT_EQ(default_text(*find_option("solver")), "gen-alpha");
  EXPECT_NE(format_option_table().find("--rho-inf"), std::string::npos);
}

TEST(Options, FindByKeyFlagOrDashedKey) {
  EXPECT_EQ(find_option("t_end"), find_option("--t-end"));
  EXPECT_EQ(find_option("t-end"), find_option("t_end"));
  EXPECT_EQ(find_option("--step"), find_option("h"));
  EXPECT_EQ(find_option("nope"), nullptr);
}

TEST(Options, ParsesValues) {
  SolverOptions o;
  EXPECT_FALSE(set_option(o, "t_end", "2.5").has_value());
  EXPECT_EQ(o.t_end, 2.5);
  EXPECT_FALSE(set_option(o, "--step", " 1e-4 ").has_value());
  EXPECT_EQ(o.h, 1e-4);
  EXPECT_FALSE(set_option(o, "solver", "RK4").has_value());
  EXPECT_EQ(o.solver, SolverKind::Rk4);
  EXPECT_FALSE(set_option(o, "rho_inf", "0").has_value());
  EXPECT_EQ(o.rho_inf, 0.0);
  EXPECT_FALSE(set_option(o, "rho_inf", "1").has_value());
  EXPECT_EQ(o.rho_inf, 1.0);
  EXPECT_FALSE(set_option(o, "newton_max_iter", "+7").has_value());
  EXPECT_EQ(o.newton_max_iter, 7);
  EXPECT_FALSE(set_option(o, "initial_accelerations", "off").has_value());
  EXPECT_FALSE(o.initial_accelerations);
  EXPECT_FALSE(set_option(o, "initial-accelerations", "YES").has_value());
  EXPECT_TRUE(o.initial_accelerations);
  EXPECT_FALSE(set_option(o, "output_every", "0").has_value());
  EXPECT_EQ(o.output_every, 0);
  // Round trip of an arbitrary double through text.
  EXPECT_FALSE(set_option(o, "atol", "1.2345678901234567e-11").has_value());
  SolverOptions p;
  EXPECT_FALSE(set_option(p, "atol", get_option(o, *find_option("atol"))).has_value());
  EXPECT_EQ(p.atol, o.atol);
}

TEST(Options, RejectsBadValuesWithClearMessages) {
  SolverOptions o;
  const SolverOptions before = o;
  auto err = [&](const char* key, const char* value) {
    auto e = set_option(o, key, value);
    EXPECT_TRUE(e.has_value()) << key << "=" << value;
    return e.value_or("");
  };
  EXPECT_EQ(err("rho_inf", "1.5"),
            "option --rho-inf (rho_inf): 1.5 is outside the valid range [0, 1]");
  EXPECT_EQ(err("rho_inf", "-0.1"),
            "option --rho-inf (rho_inf): -0.1 is outside the valid range [0, 1]");
  EXPECT_EQ(err("h", "0"), "option --step (h): 0 is outside the valid range (0, inf)");
  EXPECT_EQ(err("t_end", "abc"), "option --t-end (t_end): 'abc' is not a finite number");
  EXPECT_EQ(err("t_end", "1.0s"), "option --t-end (t_end): '1.0s' is not a finite number");
  EXPECT_EQ(err("t_end", "inf"), "option --t-end (t_end): 'inf' is not a finite number");
  EXPECT_EQ(err("t_end", ""), "option --t-end (t_end): '' is not a finite number");
  EXPECT_EQ(err("newton_max_iter", "2.5"),
            "option --newton-max-iter (newton_max_iter): '2.5' is not an integer");
  EXPECT_EQ(err("newton_max_iter", "0"),
            "option --newton-max-iter (newton_max_iter): 0 is outside the valid range [1, 1000]");
  EXPECT_EQ(err("solver", "eulr"),
            "option --solver (solver): 'eulr' is not one of: gen-alpha, newmark, trapezoidal, "
            "euler, midpoint, rk33, rk44, rk6, ode23, dopri5");
  EXPECT_EQ(err("initial_accelerations", "maybe"),
            "option --initial-accelerations (initial_accelerations): 'maybe' is not a truth value "
            "(use true or false)");
  EXPECT_EQ(err("rho_infinity", "0.5"),
            "unknown solver option 'rho_infinity'; did you mean 'rho_inf' (--rho-inf)?");
  EXPECT_EQ(err("zzz", "1"), "unknown solver option 'zzz'");
  // Nothing was changed by the failed calls.
  for (const OptionSpec& s : option_table()) EXPECT_EQ(get_option(o, s), get_option(before, s));
}

TEST(Options, ValidatesCombinations) {
  SolverOptions o;
  o.h_min = 1e-3;
  EXPECT_EQ(validate(o).value_or(""),
            "option --h-min (h_min) = 0.001 must be smaller than the step --step (h) = 0.001");
  o = SolverOptions{};
  o.rtol = 0.0;
  o.atol = 0.0;
  EXPECT_TRUE(validate(o).has_value());
  o = SolverOptions{};
  o.rho_inf = 2.0;  // set directly in code, bypassing set_option
  EXPECT_EQ(validate(o).value_or(""),
            "option --rho-inf (rho_inf): 2 is outside the valid range [0, 1]");
  o = SolverOptions{};
  o.t_end = 1e9;  // the automatic h_min stays below h
  EXPECT_FALSE(validate(o).has_value());
  EXPECT_EQ(o.effective_h_min(), 1e-3 / 1024.0);
}

// A step the time axis cannot resolve (t + h == t, or 1/h^2 overflowing the Newton matrix) is
// refused before a run, naming the step, rather than failing later as a singular matrix.
TEST(Options, StepTooSmallForTheTimeAxisIsRefused) {
  SolverOptions o;
  EXPECT_FALSE(set_option(o, "--step", "1e-300").has_value());  // in range (0, inf) ...
  const std::string err = validate(o).value_or("");             // ... but not usable
  EXPECT_EQ(err.rfind("option --step (h) = 1e-300 is too small", 0), 0u) << err;
  EXPECT_NE(err.find("overflows"), std::string::npos) << err;
  o.h = 1e-12;  // above 4096 eps for t_end = 1
  EXPECT_FALSE(validate(o).has_value());
  o.t_end = 1e6;  // ... but not for t_end = 1e6: t + h would lose all but a few bits of h
  EXPECT_TRUE(validate(o).has_value());
}

TEST(Options, GuardOptions) {
  SolverOptions o;
  EXPECT_EQ(o.nonfinite, NonFiniteAction::Error);
  EXPECT_FALSE(set_option(o, "--nonfinite", "warn").has_value());
  EXPECT_EQ(o.nonfinite, NonFiniteAction::Warn);
  EXPECT_EQ(get_option(o, *find_option("nonfinite")), "warn");
  EXPECT_EQ(set_option(o, "nonfinite", "rk4").value_or(""),
            "option --nonfinite (nonfinite): 'rk4' is not one of: error, warn");
  EXPECT_EQ(set_option(o, "max_rejections", "0").value_or(""),
            "option --max-rejections (max_rejections): 0 is outside the valid range [1, "
            "2147483647]");
  EXPECT_FALSE(set_option(o, "--divergence-limit", "1e50").has_value());
  EXPECT_EQ(o.divergence_limit, 1e50);
}

TEST(Options, CommandLineIsBuiltFromTheTable) {
  CLI::App app("test");
  SolverOptions o;
  add_solver_options(app, o);
  const char* argv[] = {
      "prog",      "--t-end", "3", "--step=2e-4", "--solver", "rk4", "--no-initial-accelerations",
      "--rho-inf", "0.5"};
  ASSERT_NO_THROW(app.parse(static_cast<int>(std::size(argv)), argv));
  EXPECT_EQ(o.t_end, 3.0);
  EXPECT_EQ(o.h, 2e-4);
  EXPECT_EQ(o.solver, SolverKind::Rk4);
  EXPECT_FALSE(o.initial_accelerations);
  EXPECT_EQ(o.rho_inf, 0.5);
  for (const OptionSpec& s : option_table()) {
    EXPECT_NE(app.get_option_no_throw(std::string(s.flag)), nullptr) << s.flag;
  }
  CLI::App bad("test");
  SolverOptions o2;
  add_solver_options(bad, o2);
  const char* argv2[] = {"prog", "--rho-inf", "7"};
  try {
    bad.parse(3, argv2);
    FAIL() << "no error";
  } catch (const CLI::ParseError& e) {
    EXPECT_NE(std::string(e.what()).find("outside the valid range [0, 1]"), std::string::npos)
        << e.what();
  }
  EXPECT_NE(app.help().find("(default 0.9)"), std::string::npos);
}

}  // namespace
}  // namespace mbs::rt
