// `mbsc MODEL.mbs --fmu FILE.fmu`: the command line of FMU export (tools/fmu/Export.h does the
// work; docs/fmu.md).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "compiler/driver/Session.h"

namespace mbs::cli {

struct FmuFlags {
  std::string path;  // "" = no export
  int version = 2;
  std::string type = "cs";  // cs, me, both
  std::string sources = "documentation";
  std::vector<std::string> outputs;
  std::string cpu;  // "" = fmu::kDefaultFmuCpu; "host" = this machine's
  bool active() const { return !path.empty(); }
  // The CPU the kernels are compiled for (CompileOptions::cpu).
  std::string compile_cpu() const;
};

void add_fmu_flags(CLI::App& app, FmuFlags& flags);

// Writes the FMU of the session's compiled model (compiled with keep_object_files, compile_cpu()
// and sensitivities: their structure gives the model description's dependencies); prints a summary
// line (and the timing with verbose). Returns the exit code.
int run_fmu_export(Session& session, const FmuFlags& flags, bool verbose);

}  // namespace mbs::cli
