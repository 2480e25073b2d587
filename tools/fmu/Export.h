// FMU export: a compiled model (its CompiledModel and the kernels' object files) to a standard
// .fmu archive -- modelDescription.xml, the self-contained shared library
// binaries/<platform>/<id>.so (the kernels + the embedding object (Embed.h) + the runtime blob,
// linked by LLD as a library: Link.h) and the model's source files. One library that every front
// end calls (`mbsc --fmu`, tests); docs/fmu.md.
#pragma once

#include <string>
#include <vector>

#include "runtime/model/CompiledModel.h"
#include "runtime/solvers/Options.h"
#include "tools/fmu/ModelDescription.h"

namespace mbs::fmu {

// Where the model's .mbs files go in the archive: documentation/ (the default: tools that find
// sources/ may try to compile them as C), sources/, or nowhere.
enum class SourcePlacement { Documentation, Sources, None };

struct ExportOptions {
  std::string path;  // the .fmu file to write
  FmiVersion version = FmiVersion::V2;
  bool co_simulation = true;
  bool model_exchange = false;
  // The FMU outputs (variable names); with outputs_given false, the model's declared outputs, or
  // for a model that declares none its states' positions (rt::fmi::default_outputs).
  std::vector<std::string> outputs;
  bool outputs_given = false;
  // The co-simulation solver and its defaults: every option travels into the FMU (the
  // importer's communication step subdivides into steps of at most `h`); t_end is the default
  // experiment's stop time.
  rt::SolverOptions solver;
  SourcePlacement sources = SourcePlacement::Documentation;
  std::vector<std::string> source_files;  // paths of the model's .mbs files (the main one first)
  // The CPU the kernels were compiled for (CompileOptions::cpu; "" = the host's); the embedding
  // object is compiled for the same.
  std::string cpu;
  std::string generation_date;  // xs:dateTime, "" = now (UTC)
};

struct ExportReport {
  std::string model_identifier;
  std::string token;
  size_t library_bytes = 0, archive_bytes = 0;
  double link_ms = 0, total_ms = 0;
};

// The CPU FMUs are compiled for by default: the x86-64 baseline, so an FMU runs on every x86-64
// Linux machine, not only on one like the exporter's.
inline constexpr const char* kDefaultFmuCpu = "x86-64";

// The model identifier of a model name: a C identifier (other characters become '_').
std::string model_identifier(const std::string& model_name);

// Writes the FMU of `m`, whose kernels' code is in `objects` (CompileResult::object_files of a
// compile with keep_object_files). Returns "" or what went wrong (the file at options.path is
// then left as it was). A model exchange export of a model that is not an ODE after the
// compiler's eliminations is refused with the reason (rt::fmi::model_exchange_obstacle).
std::string export_fmu(const rt::CompiledModel& m, const std::vector<std::string>& objects,
                       const ExportOptions& options, ExportReport* report = nullptr);

}  // namespace mbs::fmu
