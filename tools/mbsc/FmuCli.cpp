// `mbsc --fmu` (FmuCli.h).
#include "tools/mbsc/FmuCli.h"

#include <fmt/format.h>

#include <iostream>

#include "tools/fmu/Export.h"
#include "tools/mbsc/Analyses.h"

namespace mbs::cli {

std::string FmuFlags::compile_cpu() const {
  if (cpu == "host") return {};
  return cpu.empty() ? fmu::kDefaultFmuCpu : cpu;
}

void add_fmu_flags(CLI::App& app, FmuFlags& f) {
  app.add_option("--fmu", f.path,
                 "export the model as a Functional Mock-up Unit (a self-contained .fmu archive; "
                 "docs/fmu.md)")
      ->type_name("FILE.fmu");
  app.add_option("--fmi-version", f.version, "FMU export: FMI 2.0 or 3.0 (default 2)")
      ->check(CLI::IsMember({2, 3}))
      ->type_name("2|3");
  app.add_option("--fmu-type", f.type,
                 "FMU export: co-simulation (cs, the default: the solver chosen by --solver, "
                 "--step ... inside the FMU), model exchange (me: the importer integrates; only "
                 "for models that are ODEs after the compiler's eliminations) or both")
      ->check(CLI::IsMember({"cs", "me", "both"}))
      ->type_name("cs|me|both");
  app.add_option("--fmu-sources", f.sources,
                 "FMU export: where the model's .mbs files go in the archive: documentation/ "
                 "(default), sources/, or none")
      ->check(CLI::IsMember({"documentation", "sources", "none"}))
      ->type_name("WHERE");
  app.add_option("--fmu-output", f.outputs,
                 "FMU export: a variable that is an FMU output (repeatable; default: the "
                 "variables declared `output` in the model, or if it declares none its states' "
                 "positions)")
      ->type_name("VARIABLE")
      ->allow_extra_args(false);
  app.add_option("--fmu-cpu", f.cpu,
                 "FMU export: the CPU the model's code is compiled for, by LLVM's name "
                 "(default x86-64, the baseline every x86-64 machine runs; host = this machine's "
                 "CPU with all its features)")
      ->type_name("CPU");
}

int run_fmu_export(Session& session, const FmuFlags& flags, bool verbose) {
  const CompileResult& compiled = session.compile_result();
  if (!session.model()) return kExitModelError;
  fmu::ExportOptions o;
  o.path = flags.path;
  o.version = flags.version == 3 ? fmu::FmiVersion::V3 : fmu::FmiVersion::V2;
  o.co_simulation = flags.type != "me";
  o.model_exchange = flags.type != "cs";
  o.outputs = flags.outputs;
  o.outputs_given = !flags.outputs.empty();
  o.solver = session.options();
  o.sources = flags.sources == "none"      ? fmu::SourcePlacement::None
              : flags.sources == "sources" ? fmu::SourcePlacement::Sources
                                           : fmu::SourcePlacement::Documentation;
  o.source_files = compiled.source_files;
  o.cpu = flags.compile_cpu();
  fmu::ExportReport report;
  if (std::string e = fmu::export_fmu(*session.model(), compiled.object_files, o, &report);
      !e.empty()) {
    std::cerr << "mbsc: error: cannot export " << flags.path << ": " << e << "\n";
    return kExitUsage;
  }
  std::cerr << fmt::format("mbsc: wrote {} (FMI {}, {}, model identifier {}, {:.0f} kB)\n",
                           flags.path, flags.version == 3 ? "3.0" : "2.0",
                           flags.type == "both" ? "co-simulation and model exchange"
                           : flags.type == "me" ? "model exchange"
                                                : "co-simulation",
                           report.model_identifier, report.archive_bytes / 1024.0);
  if (verbose)
    std::cerr << fmt::format("mbsc: FMU export {:.1f} ms (link {:.1f} ms, library {} bytes)\n",
                             report.total_ms, report.link_ms, report.library_bytes);
  return kExitOk;
}

}  // namespace mbs::cli
