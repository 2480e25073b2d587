// The solver options as command-line flags: one CLI11 option per row of option_table(), parsed
// and checked by set_option(), so the command line accepts exactly what the REPL and FMU
// parameters accept. Header-only so that mbs_runtime does not depend on CLI11.
#pragma once

#include <CLI/CLI.hpp>
#include <set>
#include <string>

#include "runtime/solvers/Options.h"

namespace mbs::rt {

// Adds every solver option to `app`, writing into `options` (which must outlive parsing), and
// the key of every option given into `given` when it is not null (the experiment annotation of
// the model does not change those: rt::apply_experiment).
// Boolean options are flags (`--index2` sets true) that also take a value
// (--initial-accelerations=false) and have a negated form (--no-initial-accelerations).
inline void add_solver_options(CLI::App& app, SolverOptions& options,
                               const std::string& group = "Solver options",
                               std::set<std::string>* given = nullptr) {
  for (const OptionSpec& spec : option_table()) {
    const std::string flag(spec.flag);
    std::string help(spec.help);
    if (!spec.unit.empty()) help += " [" + std::string(spec.unit) + "]";
    help += " (default " + default_text(spec) + ")";
    const std::string key(spec.key);
    auto apply = [&options, key, given](const std::string& value) {
      if (auto err = set_option(options, key, value)) throw CLI::ValidationError(*err);
      if (given != nullptr) given->insert(key);
    };
    CLI::Option* opt = nullptr;
    if (spec.type == OptionType::Boolean) {
      // a flag: `--index2` means true, `--index2=false` sets the value explicitly
      opt = app.add_flag(flag)->description(help)->each(apply);
    } else {
      opt = app.add_option_function<std::string>(flag, apply, help);
    }
    opt->group(group);
    if (spec.type == OptionType::Choice) {
      std::string names;
      for (auto c : spec.choices) names += (names.empty() ? "" : "|") + std::string(c);
      opt->type_name(names);
    } else {
      opt->type_name(spec.type == OptionType::Integer   ? "INT"
                     : spec.type == OptionType::Boolean ? "[=true|false]"
                                                        : "REAL");
    }
    if (spec.type == OptionType::Boolean) {
      app.add_flag_callback(
             "--no-" + flag.substr(2),
             [&options, key, given]() {
               (void)set_option(options, key, "false");
               if (given != nullptr) given->insert(key);
             },
             "same as " + flag + "=false")
          ->group(group);
    }
  }
}

}  // namespace mbs::rt
