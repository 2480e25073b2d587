// What is generated from mbsc's option table (tools/mbsc/Options.h): the man page and the bash
// completion, written at build time by `mbsc __generate man|bash-completion FILE`
// (cmake/Install.cmake), and the lists the completion asks for while a user types
// (`mbsc __complete models|parameters|variables FILE.mbs [--model NAME] [-I DIR]...`).
// The two commands start with "__": internal, not in --help.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace mbs::cli {

// The man page of mbsc (troff, section 1) from the options of `app` and the subcommands.
std::string man_page(const CLI::App& app);
// A bash completion script for mbsc from the options of `app`: option names, the choices of
// options that take one (solvers, --emit passes, ...), files by extension, directories, and
// model, parameter and variable names read from the model file on the line (`mbsc __complete`).
std::string bash_completion(const CLI::App& app);

// How an option's value is completed, read from the value's name in the option table:
// PARAMETER=..., VARIABLE..., NAME... (either), MODEL, FILE.ext, DIR, a|b|c (choices).
enum class ValueKind {
  None,
  Choice,
  File,
  Directory,
  ParameterName,
  VariableName,
  AnyName,
  ModelName,
  Other
};
struct OptionValue {
  ValueKind kind = ValueKind::None;
  std::string choices;    // Choice: space separated
  std::string extension;  // File: "mbs", "csv", ... (empty: any file)
};
OptionValue option_value(const CLI::Option& opt);

// `mbsc __generate ...` and `mbsc __complete ...` (argv[0] is the subcommand): exit code.
int generate_command(int argc, char** argv);
int complete_command(int argc, char** argv);

}  // namespace mbs::cli
