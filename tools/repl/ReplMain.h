// `mbsc repl [FILE [MODEL]]`: the interactive mbs on a terminal, or a script of REPL commands
// on stdin (docs/repl.md).
#pragma once

namespace mbs::repl {

// Returns the exit code.
int repl_command(int argc, char** argv);

}  // namespace mbs::repl
