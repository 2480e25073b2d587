// mbsc: the mbs command line. Compiles a .mbs model and, with --simulate, runs it.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "compiler/driver/Compile.h"
#include "runtime/io/CsvWriter.h"
#include "runtime/io/Interrupt.h"
#include "runtime/solvers/Integrator.h"
#include "runtime/solvers/Options.h"
#include "runtime/solvers/OptionsCli.h"

namespace {

// Exit codes (documented in --help and docs/cli.md).
constexpr int kExitOk = 0;
constexpr int kExitModelError = 1;
constexpr int kExitUsage = 2;
constexpr int kExitSolverFailure = 3;
constexpr int kExitInterrupted = 130;

const char* kFooter = R"(Exit codes:
  0    success
  1    model error (the diagnostics say where, with file:line:col)
  2    usage error (bad option, a solver that cannot handle the model, or an
       unwritable file given on the command line)
  3    solver failure (the message gives time, step size, equation and variable)
  130  interrupted by Ctrl-C (the result file holds every row up to that point)

Library search path: -I directories, then $MBS_PATH (colon separated), then the stdlib/.
Documentation: docs/cli.md, docs/language.md, docs/solvers.md)";

}  // namespace

int main(int argc, char** argv) {
  auto t_process = std::chrono::steady_clock::now();
  CLI::App app{"mbs: an equation-based modelling language and simulator for multibody systems",
               "mbsc"};
  app.footer(kFooter);
  app.set_version_flag("--version", std::string("mbsc ") + MBS_VERSION);

  mbs::CompileOptions copts;
  bool simulate = false;
  std::string output;
  std::vector<std::string> sets;
  app.add_option("file", copts.file, "the .mbs model file")->required()->type_name("FILE.mbs");
  app.add_flag("--simulate", simulate, "simulate the model (without it: compile and check only)");
  app.add_option("--model", copts.model,
                 "the model to compile (default: the last model in the file)")
      ->type_name("NAME");
  app.add_option("-I", copts.include_dirs, "add a directory to the library search path")
      ->type_name("DIR")
      ->allow_extra_args(false);
  app.add_option("--set", sets, "set a parameter: --set m=2 --set s.k=100")
      ->type_name("NAME=VALUE")
      ->allow_extra_args(false);
  app.add_option("--output", output,
                 "result CSV file (default: <model>.csv in the current directory)")
      ->type_name("FILE.csv");
  app.add_option("--emit", copts.emit,
                 "print the result of a pass and stop: ast, flat, dae, kernels, ir")
      ->check(CLI::IsMember({"ast", "flat", "dae", "kernels", "ir"}));
  app.add_flag("-v,--verbose", copts.verbose, "print each pass's time and the solver statistics");
  mbs::rt::SolverOptions sopts;
  mbs::rt::add_solver_options(app, sopts);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? kExitOk : kExitUsage;
  }
  for (const auto& s : sets) {
    auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0) {
      std::cerr << "mbsc: error: --set expects NAME=VALUE, got '" << s << "'\n";
      return kExitUsage;
    }
    std::string name = s.substr(0, eq), value = s.substr(eq + 1);
    char* end = nullptr;
    double x = std::strtod(value.c_str(), &end);
    if (value.empty() || *end != '\0') {
      std::cerr << "mbsc: error: --set " << name << ": '" << value << "' is not a number\n";
      return kExitUsage;
    }
    copts.overrides[name] = x;
  }
  if (auto err = mbs::rt::validate(sopts)) {
    std::cerr << "mbsc: error: " << *err << "\n";
    return kExitUsage;
  }

  // ---- compile
  mbs::CompileResult compiled = mbs::compile(copts, std::cout, std::cerr);
  if (!compiled.ok) return kExitModelError;
  double ready_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_process)
          .count();
  if (copts.verbose)
    std::cerr << fmt::format("mbsc: compiled in {:.1f} ms ({:.1f} ms since process start)\n",
                             compiled.total_ms, ready_ms);
  if (!copts.emit.empty()) return kExitOk;
  const mbs::rt::CompiledModel& model = *compiled.model;
  if (!simulate) {
    std::cerr << fmt::format(
        "mbsc: {}: model '{}' is fine: {} ODE2, {} ODE1, {} algebraic unknowns\n", copts.file,
        model.name, model.n_q, model.n_y, model.n_z);
    return kExitOk;
  }

  // ---- simulate
  std::unique_ptr<mbs::rt::Integrator> solver;
  try {
    solver = mbs::rt::make_integrator(model, sopts);
  } catch (const mbs::rt::SolverSetupError& e) {
    // the model is fine, the chosen solver or its options do not fit it
    std::cerr << "mbsc: error: " << e.what() << "\n";
    return kExitUsage;
  }
  if (output.empty()) output = model.name + ".csv";
  std::unique_ptr<mbs::rt::CsvWriter> csv;
  try {
    csv = std::make_unique<mbs::rt::CsvWriter>(output, model.output_names);
  } catch (const std::exception& e) {
    std::cerr << "mbsc: error: " << e.what() << "\n";
    return kExitUsage;
  }
  mbs::rt::install_interrupt_handler();
  auto t_run = std::chrono::steady_clock::now();
  mbs::rt::SolveStatus status = solver->run([&](double t, std::span<const double> values) {
    csv->write_row(t, values);
    return 0;
  });
  double run_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_run).count();
  try {
    csv->close();
  } catch (const std::exception& e) {
    std::cerr << "mbsc: error: " << e.what() << "\n";
    return kExitUsage;
  }
  const auto& st = solver->statistics();
  if (status == mbs::rt::SolveStatus::Failed) {
    std::cerr << solver->failure()->message;
    if (!solver->failure()->message.empty() && solver->failure()->message.back() != '\n')
      std::cerr << "\n";
    std::cerr << fmt::format("mbsc: {} rows up to t = {} are in {}\n", csv->rows(), solver->time(),
                             output);
    return kExitSolverFailure;
  }
  std::cerr << fmt::format(
      "mbsc: {} simulated to t = {} with {}: {} steps, {} Newton iterations, {} factorizations\n"
      "mbsc: compile {:.1f} ms, run {:.1f} ms; {} rows written to {}\n",
      model.name, solver->time(), solver->name(), st.steps, st.newton_iterations, st.factorizations,
      compiled.total_ms, run_s * 1e3, csv->rows(), output);
  if (copts.verbose) std::cerr << mbs::rt::format_statistics_table(st, "solver statistics");
  if (status == mbs::rt::SolveStatus::Interrupted) {
    std::cerr << "mbsc: interrupted; the result file is complete up to the last row\n";
    return kExitInterrupted;
  }
  return kExitOk;
}
