// The compiler driver: a readable list of passes from source text to a CompiledModel.
//   read -> parse -> flatten -> dae -> kernels -> codegen (LLVM ORC JIT)
// Each pass can print its result (`emit`) and reports its time when verbose.
#pragma once

#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/model/CompiledModel.h"

namespace mbs {

struct CompileOptions {
  std::string file;                         // the main .mbs file
  std::optional<std::string> source;        // the text of `file`, instead of reading it
  std::string model;                        // model to compile; empty: the last model in the file
  std::vector<std::string> include_dirs;    // -I, searched before $MBS_PATH and stdlib/
  std::map<std::string, double> overrides;  // --set NAME=VALUE
  std::map<std::string, double> start_overrides;  // --start NAME=VALUE
  std::string emit;               // "", "ast", "flat", "mech", "dae", "kernels", "ir"
  bool verbose = false;           // print each pass's time to the diagnostic stream
  int opt_level = 2;              // LLVM optimisation level
  bool reactions = false;         // multibody: every joint's wrench as outputs
  bool animation = false;         // multibody: shapes and their frames' poses (MechOptions)
  bool inverse_dynamics = false;  // compile for rt::InverseDynamics (MechOptions)
  // the kernels of exact sensitivities (CompiledModel::sens_*: derivatives with respect to the
  // parameters, for studies)
  bool sensitivities = false;
  // false: stop before code generation, after the start-value check (ok = no errors, model =
  // null; the fuzz targets use it)
  bool codegen = true;
  // FlattenOptions::max_instances, the same default (the fuzz targets lower it to keep every
  // input fast)
  size_t max_instances = 2'000'000;
  // Cache directory for compiled kernels (the object cache) and whole compiled models (the model
  // cache, ModelCache.h); "" = default_cache_dir(), "off" = no cache.
  std::string cache_dir;
  int recursive_depth = -1;  // multibody recursive form above this tree depth
                             // (-1: automatic, see MechOptions)
  // codegen::JitOptions::cpu: the CPU the kernels are compiled for ("" = the host's)
  std::string cpu;
  // Return the kernels' object files in CompileResult::object_files (an FMU links them).
  bool keep_object_files = false;
  // Start velocities that violate the velocity form of the position constraints are replaced
  // by their mass-weighted projection (an impulse of the constraint forces,
  // rt::project_velocities_by_impulse; velocities declared fixed = true are kept), with a
  // warning that lists every change, instead of the error inconsistent_start_velocity; a
  // mechanism's start assembly then leaves its velocities to it (docs/language.md, "Initial
  // equations").
  bool project_start_velocities = false;
};

struct PassTiming {
  std::string pass;
  double ms = 0;
  // Expression nodes in the compilation's symbolic context after the pass: a deterministic
  // measure of the symbolic work done so far (tests check that it grows linearly with a model's
  // size; time is not tested).
  size_t nodes = 0;
  // Nodes differentiated so far (sym::Context::derivative_steps), deterministic likewise.
  size_t derivative_steps = 0;
};

// One diagnostic of a compile as data (a front end that is not a terminal, the Python module):
// its level ("error", "warning", "note"), kind (DiagKinds.def), place (file "" and line 0 when it
// has none) and message, and the whole text as rendered to the diagnostic stream.
struct DiagnosticRecord {
  std::string level, kind, file;
  uint32_t line = 0, column = 0;
  std::string message;
  std::string rendered;
};

struct CompileResult {
  std::shared_ptr<const rt::CompiledModel> model;  // null on error or when only emitting
  bool ok = false;                                 // false: model errors were reported
  // The errors concern the command line rather than the model (a --set or --model naming
  // something the model does not have): the front end reports them as usage errors (exit 2).
  bool usage_error = false;
  // The model came from the model cache (ModelCache.h): no pass ran.
  bool model_cache_hit = false;
  std::vector<PassTiming> timings;
  std::vector<std::string> diagnostic_kinds;  // names of the diagnostic kinds reported
  // The diagnostics rendered to the diagnostic stream, in order (a model-cache hit: none; its
  // warnings are printed again as text).
  std::vector<DiagnosticRecord> diagnostics;
  // size of each kernel: expression nodes reachable from its outputs (a node shared by several
  // outputs counts once), and its number of outputs
  struct KernelSize {
    std::string name;
    size_t nodes = 0;
    size_t outputs = 0;
  };
  std::vector<KernelSize> kernel_sizes;
  // With CompileOptions::keep_object_files: the relocatable objects (position-independent, for
  // CompileOptions::cpu) holding the code of every kernel symbol of `model` (Kernel::symbol).
  std::vector<std::string> object_files;
  // The files the model was read from: the main file, then every library file used.
  std::vector<std::string> source_files;
  double total_ms = 0;
};

// Runs the pipeline. Diagnostics go to `diag_out`; `--emit` output to `emit_out`. When `emit` is
// set, the pipeline stops after that pass (ok = true, model = null) unless it is "ir".
CompileResult compile(const CompileOptions& options, std::ostream& emit_out,
                      std::ostream& diag_out);

// The default object cache: $MBS_CACHE_DIR ("off" disables it), else $XDG_CACHE_HOME/mbs, else
// $HOME/.cache/mbs; "" when none can be found.
std::string default_cache_dir();

// The library search path for include_dirs: -I dirs, then $MBS_PATH (colon separated), then the
// stdlib/ of this installation.
std::vector<std::string> library_path(const std::vector<std::string>& include_dirs);

}  // namespace mbs
