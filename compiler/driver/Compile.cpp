#include "compiler/driver/Compile.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <ostream>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "compiler/codegen/Jit.h"
#include "compiler/dae/Dae.h"
#include "compiler/dae/Initial.h"
#include "compiler/diag/Diagnostics.h"
#include "compiler/driver/Kernels.h"
#include "compiler/driver/ModelCache.h"
#include "compiler/flatten/Flatten.h"
#include "compiler/mech/Mechanics.h"
#include "compiler/symbolic/Expr.h"
#include "compiler/syntax/Parser.h"
#include "runtime/io/Home.h"
#include "runtime/io/InputFile.h"
#include "runtime/model/Constraints.h"
#include "runtime/solvers/GenAlpha.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace mbs {

std::string default_cache_dir() {
  if (const char* d = std::getenv("MBS_CACHE_DIR"); d != nullptr && *d != '\0') return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x != nullptr && *x != '\0')
    return std::string(x) + "/mbs";
  if (const char* h = std::getenv("HOME"); h != nullptr && *h != '\0')
    return std::string(h) + "/.cache/mbs";
  return {};
}

std::vector<std::string> library_path(const std::vector<std::string>& include_dirs) {
  std::vector<std::string> path = include_dirs;
  if (const char* env = std::getenv("MBS_PATH")) {
    std::string s = env;
    size_t start = 0;
    while (start <= s.size()) {
      size_t colon = s.find(':', start);
      std::string d =
          s.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
      if (!d.empty()) path.push_back(d);
      if (colon == std::string::npos) break;
      start = colon + 1;
    }
  }
  // the standard library of this installation or build tree (runtime/io/Home.h)
  // (its real path: the build tree's share/mbs/stdlib is a link to the source's stdlib/, whose
  // files messages name as the user sees them)
  if (const std::string stdlib = rt::install_home().stdlib_dir(); !stdlib.empty()) {
    std::error_code ec;
    const std::filesystem::path real = std::filesystem::canonical(stdlib, ec);
    path.push_back(ec ? stdlib : real.string());
  }
  return path;
}

namespace {

using Clock = std::chrono::steady_clock;

// Gives the pages of the memory a pass has freed back to the system (glibc keeps them, and the
// next pass's allocations of other sizes do not always reuse them).
void release_freed_memory() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

// Everything one compilation owns; the CompiledModel keeps it alive through code_owner. The
// symbolic context goes once the model is assembled (the runtime needs only the code: a model
// cache hit has no context either).
struct CompilationState {
  std::unique_ptr<sym::Context> cx = std::make_unique<sym::Context>();
  std::unique_ptr<codegen::JitModule> jit;
};

// Once the DAE is built, the rest of the compile (the parameters' values and bindings for the
// kernels, the assembly of the CompiledModel) reads of the flat variables only the parameters,
// constants, inputs and discrete variables (values, bindings, bounds, compile-time marks) and the
// multipliers and auxiliaries among the unknowns (z_level, z_auxiliary); the DAE has its own
// copies of everything else. The other variables go (10^5 FlatVars of 272 bytes in a model
// of 10^5 equations), and var_of_symbol is rebuilt over those kept: a symbol not found in it is
// treated as a variable by every reader.
void keep_variables_the_assembly_reads(FlatModel& flat) {
  const auto read = [](const FlatVar& v) {
    return v.role != VarRole::Variable || v.multiplier ||
           v.auxiliary != rt::EquationLevel::Algebraic;
  };
  const auto kept = static_cast<size_t>(std::count_if(flat.vars.begin(), flat.vars.end(), read));
  if (kept == flat.vars.size()) return;
  std::vector<FlatVar> vars;
  vars.reserve(kept);
  for (FlatVar& v : flat.vars)
    if (read(v)) vars.push_back(std::move(v));
  flat.vars.swap(vars);
  std::vector<FlatVar>().swap(vars);
  std::unordered_map<uint32_t, size_t> index;
  index.reserve(kept);
  for (size_t i = 0; i < flat.vars.size(); ++i) index.emplace(flat.vars[i].symbol, i);
  flat.var_of_symbol.swap(index);
}

rt::SourceRef source_ref(const SourceManager& sm, Span s, std::string text) {
  rt::SourceRef r;
  if (s.valid() && s.file >= 1 && s.file <= sm.file_count()) {
    r.file = sm.path(s.file);
    r.line = s.line;
    r.col = s.col;
  }
  r.text = std::move(text);
  return r;
}

rt::SparseKernel sparse(const MatrixKernel& m, const codegen::JitModule& jit) {
  rt::SparseKernel k;
  k.values.fn = jit.lookup(m.spec.name);
  k.values.symbol = jit.code_symbol(m.spec.name);
  k.values.n_out = static_cast<int32_t>(m.spec.outputs.size());
  k.rows = m.pattern.rows;
  k.cols = m.pattern.cols;
  k.row = m.pattern.row;
  k.col = m.pattern.col;
  return k;
}

rt::Kernel kernel(const codegen::KernelSpec& s, const codegen::JitModule& jit) {
  return rt::Kernel{jit.lookup(s.name), static_cast<int32_t>(s.outputs.size()),
                    jit.code_symbol(s.name)};
}

// The parameters of the CompiledModel: names, slots, bounds, units, and which of them the
// compiler used as numbers (FlatModel::compile_time_parameters, closed over the bindings: a
// parameter that a compile-time parameter's binding reads is compile-time too).
void set_parameter_info(const FlatModel& flat, const sym::Context& cx, const SourceManager& sources,
                        rt::CompiledModel& m) {
  std::unordered_map<uint32_t, std::string> fixed = flat.compile_time_parameters;
  std::vector<uint32_t> work;
  for (const auto& [s, why] : fixed) work.push_back(s);
  while (!work.empty()) {
    const uint32_t s = work.back();
    work.pop_back();
    const FlatVar& v = flat.vars[flat.var_of_symbol.at(s)];
    if (!v.binding) continue;
    for (uint32_t r : sym::free_symbols(v.binding)) {
      auto it = flat.var_of_symbol.find(r);
      if (it == flat.var_of_symbol.end() || flat.vars[it->second].role == VarRole::Variable)
        continue;
      if (fixed.emplace(r, "the value of '" + v.name + "', " + fixed.at(s)).second)
        work.push_back(r);
    }
  }
  std::vector<double> values(cx.symbol_count(), 0.0);
  for (const FlatVar& v : flat.vars)
    if (v.role != VarRole::Variable) values[v.symbol] = v.value;
  // passes of parameter_bindings: the longest chain of bindings (acyclic: the flattener checked)
  std::unordered_map<uint32_t, int32_t> depth;
  std::function<int32_t(uint32_t)> depth_of = [&](uint32_t s) -> int32_t {
    if (auto it = depth.find(s); it != depth.end()) return it->second;
    const FlatVar& v = flat.vars[flat.var_of_symbol.at(s)];
    int32_t d = 1;
    if (v.binding)
      for (uint32_t r : sym::free_symbols(v.binding))
        if (auto it = flat.var_of_symbol.find(r);
            it != flat.var_of_symbol.end() && flat.vars[it->second].role == VarRole::Parameter)
          d = std::max(d, 1 + depth_of(r));
    return depth[s] = d;
  };
  const double inf = std::numeric_limits<double>::infinity();
  for (const FlatVar& v : flat.vars) {
    if (v.role != VarRole::Parameter) continue;
    m.parameters.push_back({v.name, source_ref(sources, v.span, v.name)});
    m.parameter_slot.push_back(static_cast<int32_t>(v.symbol));
    auto it = fixed.find(v.symbol);
    m.parameter_compile_time.push_back(it == fixed.end() ? std::string() : it->second);
    bool derived = false;
    if (v.binding)
      for (uint32_t r : sym::free_symbols(v.binding))
        if (auto at = flat.var_of_symbol.find(r);
            at != flat.var_of_symbol.end() && flat.vars[at->second].role == VarRole::Parameter)
          derived = true;
    m.parameter_derived.push_back(derived ? 1 : 0);
    m.parameter_type.push_back(static_cast<uint8_t>(v.type));
    m.parameter_min.push_back(v.min ? sym::evaluate(v.min, values) : -inf);
    m.parameter_max.push_back(v.max ? sym::evaluate(v.max, values) : inf);
    m.parameter_unit.push_back(v.unit);
    m.parameter_description.push_back(v.description);
    m.parameter_binding_passes = std::max(m.parameter_binding_passes, depth_of(v.symbol));
  }
}

}  // namespace

CompileResult compile(const CompileOptions& options, std::ostream& emit_out,
                      std::ostream& diag_out) {
  CompileResult result;
  auto t_start = Clock::now();
  auto last = t_start;
  const sym::Context* context = nullptr;  // the compilation's, once it exists
  auto mark = [&](const char* pass) {
    auto now = Clock::now();
    double ms = std::chrono::duration<double, std::milli>(now - last).count();
    last = now;
    result.timings.push_back({pass, ms, context != nullptr ? context->node_count() : 0,
                              context != nullptr ? context->derivative_steps() : 0});
    if (options.verbose)
      diag_out << fmt::format("mbsc: pass {:<8} {:8.3f} ms {:>10} nodes {:>10} derivative steps\n",
                              pass, ms, result.timings.back().nodes,
                              result.timings.back().derivative_steps);
  };

  SourceManager sources;
  DiagnosticEngine diags(sources);
  auto finish = [&](bool ok) {
    for (const Diagnostic& d : diags.diagnostics()) {
      if (!options.verbose && shown_only_when_verbose(d.kind)) continue;
      std::ostringstream text;
      render_diagnostic(text, sources, d);
      diag_out << text.str();
      DiagnosticRecord r;
      r.level = d.level == DiagLevel::Error     ? "error"
                : d.level == DiagLevel::Warning ? "warning"
                                                : "note";
      r.kind = diag_info(d.kind).name;
      if (d.span.file != 0) r.file = sources.path(d.span.file);
      r.line = d.span.line;
      r.column = d.span.col;
      r.message = d.message;
      r.rendered = text.str();
      result.diagnostics.push_back(std::move(r));
    }
    for (DiagKind k : diags.kinds_seen()) result.diagnostic_kinds.push_back(diag_info(k).name);
    result.ok = ok && !diags.has_errors();
    // errors in what the command line names, not in the model
    for (const Diagnostic& d : diags.diagnostics())
      if (d.kind == DiagKind::unknown_override || d.kind == DiagKind::unknown_start_override ||
          d.kind == DiagKind::no_model)
        result.usage_error = true;
    result.total_ms = std::chrono::duration<double, std::milli>(Clock::now() - t_start).count();
    return result;
  };

  // ---- read
  std::string text;
  if (options.source) {
    text = *options.source;
  } else {
    // bounded: a device, FIFO or directory, or a file above the limit is refused (InputFile.h)
    std::string why;
    std::optional<std::string> read =
        rt::read_input_file(options.file, rt::kSourceFileLimit, "model file", why);
    if (!read) {
      // the location is the file itself: `path: error: ...`
      const uint32_t id = sources.add_file(options.file, std::string());
      diags.report(DiagKind::file_not_found, Span{id, 0, 0, 0, 0}, {why});
      return finish(false);
    }
    text = std::move(*read);
  }
  // ---- the model cache: a compile of the same inputs skips every pass (ModelCache.h)
  std::string cache_dir = options.cache_dir.empty() ? default_cache_dir() : options.cache_dir;
  if (cache_dir == "off") cache_dir.clear();
  const bool model_cache = !cache_dir.empty() && options.emit.empty() && options.codegen;
  codegen::CacheKey model_key{};
  if (model_cache) {
    model_key = model_cache_key(options, text);
    ModelCacheRead cached = read_model_cache(cache_dir, model_key);
    const std::string entry = codegen::cache_entry_path(cache_dir, model_key, ".model");
    if (!cached.damage.empty() && cached.delete_error.empty())
      diags.report(DiagKind::model_cache_entry_damaged, Span{}, {entry, cached.damage});
    else if (!cached.damage.empty())
      diags.report(DiagKind::model_cache_entry_undeletable, Span{},
                   {entry, cached.damage, cached.delete_error});
    if (cached.hit.model != nullptr) {
      mark("cache");
      if (options.verbose) diag_out << fmt::format("mbsc: model cache hit: {}\n", entry);
      diag_out << cached.hit.warnings;
      if (options.verbose) diag_out << cached.hit.notes;
      result.model = std::move(cached.hit.model);
      result.diagnostic_kinds = std::move(cached.hit.diagnostic_kinds);
      result.kernel_sizes = std::move(cached.hit.kernel_sizes);
      if (options.keep_object_files) result.object_files = std::move(cached.hit.objects);
      result.source_files.push_back(options.file);
      for (std::string& f : cached.hit.library_files) result.source_files.push_back(std::move(f));
      result.model_cache_hit = true;
      result.ok = true;
      result.total_ms = std::chrono::duration<double, std::milli>(Clock::now() - t_start).count();
      return result;
    }
  }
  uint32_t file_id = sources.add_file(options.file, std::move(text));
  mark("read");

  // ---- parse
  auto file = parse_file(sources, file_id, diags);
  mark("parse");
  if (!file || diags.has_errors()) return finish(false);
  if (options.emit == "ast") {
    print_ast(emit_out, *file);
    return finish(true);
  }

  // ---- flatten
  auto state = std::make_shared<CompilationState>();
  sym::Context& cx = *state->cx;
  context = &cx;
  DerivativeTable ders(cx);
  ClassLoader loader(sources, diags, library_path(options.include_dirs));
  const ast::File* main_file = file.get();
  loader.add_file(std::move(file));
  const ast::ClassDef* model = select_model(*main_file, options.model);
  if (!model) {
    if (options.model.empty())
      diags.report(DiagKind::no_models_in_file, Span{file_id, 1, 1, 1, 1}, {});
    else {
      diags.report(DiagKind::no_model, Span{file_id, 0, 0, 0, 0}, {options.model});
      std::string names;
      for (const auto& c : main_file->classes)
        names += (names.empty() ? "" : ", ") + std::string("'") + c->name + "'";
      if (!names.empty()) diags.note(Span{}, "the file defines " + names);
    }
    return finish(false);
  }
  FlattenOptions fopts;
  fopts.model_name = options.model;
  fopts.overrides = options.overrides;
  fopts.start_overrides = options.start_overrides;
  fopts.max_instances = options.max_instances;
  auto flat = flatten(*model, loader, sources, cx, ders, fopts, diags);
  mark("flatten");
  if (!flat) {
    // a library class not found may be the standard library missing from the installation
    const rt::InstallHome& home = rt::install_home();
    std::error_code ec;
    if (home.root.empty() || !std::filesystem::is_directory(home.stdlib_dir(), ec))
      diags.note(Span{}, "the standard library was not found (" + home.explain() + ")");
    return finish(false);
  }
  if (options.emit == "flat") {
    print_flat_model(emit_out, cx, *flat);
    return finish(true);
  }

  // ---- mech: bodies, joints and loops become equations
  MechOptions mopts;
  mopts.recursive_depth = options.recursive_depth;
  mopts.reactions = options.reactions;
  mopts.animation = options.animation;
  mopts.inverse_dynamics = options.inverse_dynamics;
  mopts.assemble_velocities = !options.project_start_velocities;
  bool mech_ok =
      lower_mechanics(*flat, cx, ders, mopts, diags, options.emit == "mech" ? &emit_out : nullptr);
  mark("mech");
  if (!mech_ok) return finish(false);
  if (options.emit == "mech") {
    print_flat_model(emit_out, cx, *flat);
    return finish(true);
  }
  flat->vars.shrink_to_fit();  // grown by doubling: up to half of it unused, until the end

  // ---- dae
  auto dae = build_dae(*flat, cx, ders, diags);
  mark("dae");
  release_freed_memory();
  if (!dae) return finish(false);
  if (options.emit == "dae") {
    print_dae(emit_out, cx, *dae);
    return finish(true);
  }
  // the DAE has its own copies of the equations (their residuals resolved, their texts; build_dae
  // consumed flat->equations) and of the variables
  std::vector<FlatEquation>().swap(flat->initial_equations);
  // the declared types of the variables that are not Real (their result columns'; before the
  // variables the assembly does not read go)
  std::unordered_map<std::string, uint8_t> non_real;
  for (const FlatVar& v : flat->vars)
    if (v.type != ScalarType::Real) non_real.emplace(v.name, static_cast<uint8_t>(v.type));
  keep_variables_the_assembly_reads(*flat);

  // ---- parameter values (resolved by the flattener)
  std::unordered_map<uint32_t, double> param_value;
  for (const FlatVar& v : flat->vars)
    if (v.role != VarRole::Variable) param_value[v.symbol] = v.value;

  // ---- kernels
  ModelKernels kernels = build_kernels(*dae, cx, options.inverse_dynamics);
  std::vector<uint32_t> parameter_symbols;
  VariableGroups parameter_groups;  // the parameters of an array of components, for loops
  for (const FlatVar& v : flat->vars)
    if (v.role == VarRole::Parameter) {
      kernels.parameter_bindings.outputs.push_back(v.binding ? v.binding : cx.num(v.value));
      kernels.parameter_bindings.groups.push_back(parameter_groups.of(v.span, v.name));
      parameter_symbols.push_back(v.symbol);
    }
  if (options.sensitivities) {
    kernels.sensitivities = true;
    std::vector<uint32_t> qs, qds, qdds, ys, yds, zs;
    for (const auto& u : dae->q) qs.push_back(u.symbol), qds.push_back(u.d1), qdds.push_back(u.d2);
    for (const auto& u : dae->y) ys.push_back(u.symbol), yds.push_back(u.d1);
    for (const auto& u : dae->z) zs.push_back(u.symbol);
    const auto cat = [](std::initializer_list<const std::vector<uint32_t>*> parts) {
      std::vector<uint32_t> all;
      for (const auto* p : parts) all.insert(all.end(), p->begin(), p->end());
      return all;
    };
    kernels.sens_F_p = symbol_jacobian(cx, "sens_F_p", kernels.residual.outputs, parameter_symbols);
    kernels.sens_init = symbol_jacobian(cx, "sens_init", kernels.init_residual.outputs,
                                        cat({&qs, &qds, &ys, &parameter_symbols}));
    kernels.sens_start =
        symbol_jacobian(cx, "sens_start", kernels.initial_values.outputs, parameter_symbols);
    kernels.sens_bindings =
        symbol_jacobian(cx, "sens_bindings", kernels.parameter_bindings.outputs, parameter_symbols);
    kernels.sens_outputs =
        symbol_jacobian(cx, "sens_outputs", kernels.outputs.outputs,
                        cat({&qs, &qds, &qdds, &ys, &yds, &zs, &parameter_symbols}));
  }
  mark("kernels");
  release_freed_memory();
  if (options.emit == "kernels") {
    print_kernels(emit_out, cx, kernels);
    return finish(true);
  }

  // ---- start values must depend on parameters only
  for (size_t i = 0; i < kernels.initial_values.outputs.size(); ++i) {
    for (uint32_t s : sym::free_symbols(kernels.initial_values.outputs[i])) {
      if (param_value.count(s)) continue;
      // the flattener checks the start values written in the model; this one was generated
      diags.report(DiagKind::not_structural, flat->span,
                   {"a generated start value (it depends on '" + cx.symbol_name(s) + "')"});
      return finish(false);
    }
  }
  if (!options.codegen) return finish(true);
  // does the leading matrix (newton_matrix at zero coefficients) depend on parameters only?
  bool constant_leading_matrix = true;
  {
    std::unordered_map<uint32_t, sym::Expr> zero = {
        {kernels.c_q, cx.zero()}, {kernels.c_qd, cx.zero()}, {kernels.c_y, cx.zero()}};
    for (sym::Expr e : kernels.newton_matrix.spec.outputs) {
      for (uint32_t s : sym::free_symbols(sym::substitute(cx, e, zero)))
        if (!param_value.count(s) || flat->vars[flat->var_of_symbol.at(s)].role == VarRole::Input ||
            flat->vars[flat->var_of_symbol.at(s)].role == VarRole::Discrete)  // changes over a run
          constant_leading_matrix = false;
      if (!constant_leading_matrix) break;
    }
  }

  // ---- codegen
  std::string error, ir;
  const std::vector<const codegen::KernelSpec*> specs = kernels.all();
  for (const codegen::KernelSpec* k : specs)
    result.kernel_sizes.push_back(
        {k->name, sym::topological_order(k->outputs).size(), k->outputs.size()});
  codegen::JitOptions jopts;
  jopts.opt_level = options.opt_level;
  // the kernels the inverse dynamics evaluates at every sample are optimised in addition to the
  // usual budget (which the code generator spends in the order of `specs`)
  if (kernels.inverse_dynamics)
    for (size_t i = 0; i < ModelKernels::per_sample_inverse; ++i)
      jopts.max_optimised_total_nodes +=
          sym::topological_order(specs[i]->outputs).size() + specs[i]->outputs.size();
  jopts.cache_dir = cache_dir;
  // stored in the model cache below (then dropped), or returned
  jopts.keep_object_files = model_cache || options.keep_object_files;
  jopts.cpu = options.cpu;
  state->jit =
      codegen::JitModule::compile(cx, specs, jopts, &error, options.emit == "ir" ? &ir : nullptr);
  mark("codegen");
  if (state->jit && options.verbose && !jopts.cache_dir.empty())
    diag_out << fmt::format("mbsc: object cache {}: {} of {} objects reused\n", jopts.cache_dir,
                            state->jit->cache_hits(), state->jit->objects());
  if (state->jit) {
    for (const codegen::CacheDamage& d : state->jit->cache_damage()) {
      if (d.delete_error.empty())
        diags.report(DiagKind::cache_entry_damaged, Span{}, {d.path, d.reason});
      else
        diags.report(DiagKind::cache_entry_undeletable, Span{}, {d.path, d.reason, d.delete_error});
    }
  }
  if (!state->jit) {
    diags.report(DiagKind::jit_failed, Span{}, {error});
    return finish(false);
  }
  if (options.emit == "ir") emit_out << ir;
  for (const codegen::KernelSpec* spec : specs) {
    if (state->jit->lookup(spec->name)) continue;
    diags.report(DiagKind::jit_failed, Span{}, {"no code for kernel '" + spec->name + "'"});
    return finish(false);
  }
  // the kernels are compiled: the pages the code generator's threads freed go (their own
  // arenas, which the assembly on this thread does not reuse)
  release_freed_memory();

  // ---- assemble the CompiledModel
  auto m = std::make_shared<rt::CompiledModel>();
  m->name = dae->name;
  m->experiment_stop_time = model->experiment.stop_time;
  m->experiment_interval = model->experiment.interval;
  m->experiment_tolerance = model->experiment.tolerance;
  m->n_q = static_cast<int32_t>(dae->q.size());
  m->n_y = static_cast<int32_t>(dae->y.size());
  m->n_z = static_cast<int32_t>(dae->z.size());
  m->slot_time = static_cast<int32_t>(dae->time_symbol);
  m->slot_c_q = static_cast<int32_t>(kernels.c_q);
  m->slot_c_qd = static_cast<int32_t>(kernels.c_qd);
  m->slot_c_y = static_cast<int32_t>(kernels.c_y);
  m->residual = kernel(kernels.residual, *state->jit);
  m->newton_matrix = sparse(kernels.newton_matrix, *state->jit);
  m->mass_matrix = sparse(kernels.mass_matrix, *state->jit);
  m->init_residual = kernel(kernels.init_residual, *state->jit);
  m->init_matrix = sparse(kernels.init_matrix, *state->jit);
  m->jac_q = sparse(kernels.jac_q, *state->jit);
  m->jac_qd = sparse(kernels.jac_qd, *state->jit);
  m->jac_y = sparse(kernels.jac_y, *state->jit);
  m->jac_z = sparse(kernels.jac_z, *state->jit);
  m->index2_residual = kernel(kernels.index2_residual, *state->jit);
  m->index2_matrix = sparse(kernels.index2_matrix, *state->jit);
  m->outputs = kernel(kernels.outputs, *state->jit);
  if (kernels.inverse_dynamics) {
    m->outputs_z = sparse(kernels.outputs_z, *state->jit);
    m->constraint_g = kernel(kernels.constraint_g, *state->jit);
    m->constraint_G = sparse(kernels.constraint_G, *state->jit);
    m->constraint_gd = kernel(kernels.constraint_gd, *state->jit);
    m->constraint_gamma = kernel(kernels.constraint_gamma, *state->jit);
    m->body_rows = kernel(kernels.body_rows, *state->jit);
    m->body_wrench = kernel(kernels.body_wrench, *state->jit);
    m->body_rows_u = sparse(kernels.body_rows_u, *state->jit);
    m->body_wrench_u = sparse(kernels.body_wrench_u, *state->jit);
    m->body_row_names = dae->body_balance.row_names;
    m->body_reaction_names = dae->body_balance.reaction_names;
    m->body_wrench_names = dae->body_balance.wrench_names;
    m->inverse_balance = kernel(kernels.inverse_balance, *state->jit);
    m->inverse_output_columns = kernels.inverse_output_columns;
    m->inverse_outputs_z_row = kernels.inverse_outputs_z.row;
    m->inverse_outputs_z_col = kernels.inverse_outputs_z.col;
  }
  m->initial_values = kernel(kernels.initial_values, *state->jit);
  if (kernels.has_events) {
    m->events = kernel(kernels.events, *state->jit);
    m->event_reinit = kernel(kernels.event_reinit, *state->jit);
    m->n_crossings = kernels.n_crossings;
    m->n_switches = kernels.n_switches;
    m->crossing_side_slot.assign(kernels.crossing_sides.begin(), kernels.crossing_sides.end());
    m->when_first_branch.push_back(0);
    m->branch_first_reinit.push_back(0);
    for (const DaeWhen& w : dae->whens) {
      for (const DaeWhenBranch& b : w.branches) {
        m->branch_source.push_back(source_ref(sources, b.condition_span, b.condition_text));
        for (const DaeReinit& r : b.reinits) {
          m->reinit_slot.push_back(static_cast<int32_t>(r.state));
          m->reinit_scale.push_back(r.scale);
          m->reinit_source.push_back(source_ref(sources, r.span, r.text));
        }
        m->branch_first_reinit.push_back(static_cast<int32_t>(m->reinit_slot.size()));
        bool at_start = false;
        if (dae->initial_symbol >= 0)
          for (uint32_t sy : sym::free_symbols(b.condition))
            at_start |= static_cast<int64_t>(sy) == dae->initial_symbol;
        m->branch_initial.push_back(at_start ? 1 : 0);
      }
      m->when_first_branch.push_back(static_cast<int32_t>(m->branch_source.size()));
    }
    for (const auto& [x, p] : dae->pre_symbols) {
      m->pre_value_slot.push_back(static_cast<int32_t>(x));
      m->pre_slot.push_back(static_cast<int32_t>(p));
    }
    m->slot_initial = static_cast<int32_t>(dae->initial_symbol);
    m->slot_terminal = static_cast<int32_t>(dae->terminal_symbol);
  }
  m->parameter_bindings = kernel(kernels.parameter_bindings, *state->jit);
  if (kernels.sensitivities) {
    m->sens_F_p = sparse(kernels.sens_F_p, *state->jit);
    m->sens_init = sparse(kernels.sens_init, *state->jit);
    m->sens_start = sparse(kernels.sens_start, *state->jit);
    m->sens_bindings = sparse(kernels.sens_bindings, *state->jit);
    m->sens_outputs = sparse(kernels.sens_outputs, *state->jit);
  }
  m->constant_leading_matrix = constant_leading_matrix;
  // every kernel has its code and sizes in the CompiledModel: the outputs and patterns go
  kernels = ModelKernels{};
  const std::unordered_set<uint32_t> discrete(dae->discretes.begin(), dae->discretes.end());
  // the vectors of 10^5 elements are not grown by doubling (up to twice their size held)
  const size_t n_out = dae->outputs.size();
  m->output_names.reserve(n_out);
  m->output_role.reserve(n_out);
  m->output_unit.reserve(n_out);
  m->output_description.reserve(n_out);
  m->output_interface.reserve(n_out);
  m->output_discrete.reserve(n_out);
  m->output_source.reserve(n_out);
  for (auto& o : dae->outputs) {
    m->output_names.push_back(std::move(o.name));
    m->output_role.push_back(o.role);
    m->output_unit.push_back(std::move(o.unit));
    m->output_description.push_back(std::move(o.description));
    m->output_interface.push_back(o.interface_output ? 1 : 0);
    m->output_discrete.push_back(o.value->is_symbol() && discrete.count(o.value->symbol) ? 1 : 0);
    const auto type = non_real.find(m->output_names.back());
    m->output_type.push_back(type == non_real.end() ? 0 : type->second);
    rt::OutputSource src;
    src.declaration = source_ref(sources, o.declared, m->output_names.back());
    if (o.eliminated >= 0) {
      const Elimination& el = dae->eliminated[static_cast<size_t>(o.eliminated)];
      src.kind =
          el.how == "explicit" ? rt::OutputSource::Kind::Explicit : rt::OutputSource::Kind::Alias;
      src.definition = source_ref(sources, el.span, el.text);
      // a = +-c*b: the slot of b and the factor
      sym::Expr e = o.value;
      double scale = 1.0;
      if (e->op == sym::Op::Mul && e->nargs == 2 && e->arg(0)->is_const()) {
        scale = e->arg(0)->value;
        e = e->arg(1);
      }
      if (e->is_symbol() && scale != 0.0) {
        src.alias_slot = static_cast<int32_t>(e->symbol);
        src.alias_scale = scale;
      }
    }
    m->output_source.push_back(std::move(src));
  }
  // the outputs are in the CompiledModel: the DAE's go before the per-unknown vectors are made
  std::vector<DaeOutput>().swap(dae->outputs);
  std::vector<Elimination>().swap(dae->eliminated);
  m->q_slot.reserve(dae->q.size());
  m->qd_slot.reserve(dae->q.size());
  m->qdd_slot.reserve(dae->q.size());
  m->q.reserve(dae->q.size());
  m->y_slot.reserve(dae->y.size());
  m->yd_slot.reserve(dae->y.size());
  m->y.reserve(dae->y.size());
  m->z_slot.reserve(dae->z.size());
  m->z.reserve(dae->z.size());
  const size_t n_eq = dae->equations.size();
  m->eq_level.reserve(n_eq);
  m->eq_source.reserve(n_eq);
  m->eq_role.reserve(n_eq);
  m->eq_param_slot.reserve(n_eq);
  m->eq_subject.reserve(n_eq);
  for (const auto& u : dae->q) {
    m->q_slot.push_back(static_cast<int32_t>(u.symbol));
    m->qd_slot.push_back(static_cast<int32_t>(u.d1));
    m->qdd_slot.push_back(static_cast<int32_t>(u.d2));
    m->q.push_back({u.name, source_ref(sources, u.span, u.name)});
  }
  for (const auto& u : dae->y) {
    m->y_slot.push_back(static_cast<int32_t>(u.symbol));
    m->yd_slot.push_back(static_cast<int32_t>(u.d1));
    m->y.push_back({u.name, source_ref(sources, u.span, u.name)});
  }
  for (const auto& u : dae->z) {
    m->z_slot.push_back(static_cast<int32_t>(u.symbol));
    m->z.push_back({u.name, source_ref(sources, u.span, u.name)});
  }
  for (const auto& e : dae->equations) {
    m->eq_level.push_back(e.level);
    m->eq_source.push_back(source_ref(sources, e.span, e.text));
    m->eq_role.push_back(e.role);
    m->eq_param_slot.push_back(e.param >= 0 ? static_cast<int32_t>(e.param) : -1);
    m->eq_subject.push_back(e.subject);
  }
  if (!flat->shapes.empty()) {
    // the animation's shapes and the first pose column of each of their frames
    std::unordered_map<std::string_view, int32_t> column;
    for (size_t i = 0; i < m->output_names.size(); ++i)
      if (m->output_role[i] == rt::OutputRole::ShapePose)
        column.emplace(m->output_names[i], static_cast<int32_t>(i));
    for (const std::string& f : flat->shape_frames) {
      auto it = column.find(f + ".shape_r[1]");
      if (it == column.end() || it->second + rt::kPoseColumns > static_cast<int32_t>(n_out))
        throw std::logic_error("the pose outputs of frame " + f + " are missing");
      m->shape_frame_column.push_back(it->second);
    }
    m->shapes = std::move(flat->shapes);
    m->shape_frames = std::move(flat->shape_frames);
  }
  if (!flat->rotation_charts.empty()) {
    // the charts of Lie-group rotations: theta and w must be ODE1 unknowns (y), Q_ref discrete
    const std::unordered_set<int32_t> y_slots(m->y_slot.begin(), m->y_slot.end());
    for (const auto& chart : flat->rotation_charts) {
      for (size_t k = 0; k < chart.size(); ++k) {
        const auto slot = static_cast<int32_t>(chart[k]);
        if (k < 6 ? !y_slots.count(slot) : !discrete.count(chart[k])) {
          diags.report(DiagKind::mech_invalid, flat->span,
                       {"the rotation chart variable '" + cx.symbol_name(chart[k]) +
                        "' is not a state of the model (an equation of the model fixes it?)"});
          return finish(false);
        }
        m->rotation_charts.push_back(slot);
      }
    }
  }
  for (const rt::SparseKernel* k : {&m->newton_matrix, &m->mass_matrix, &m->init_matrix, &m->jac_q,
                                    &m->jac_qd, &m->jac_y, &m->jac_z, &m->index2_matrix}) {
    if (k->values.fn) continue;
    diags.report(DiagKind::jit_failed, Span{}, {"a matrix kernel of the model has no code"});
    return finish(false);
  }
  // The start values are checked against the constraints below with the parameters' values: a
  // parameter in a constraint is compile-time, so that a new value gets that check (with its
  // message at the constraint) instead of a Newton failure at the first step.
  for (int32_t i = 0; i < m->n_eq(); ++i) {
    const auto level = m->eq_level[static_cast<size_t>(i)];
    if (level != rt::EquationLevel::Position && level != rt::EquationLevel::Velocity) continue;
    const rt::SourceRef at = source_ref(sources, dae->equations[i].span, "");
    for (uint32_t s : sym::free_symbols(dae->equations[i].residual))
      if (auto it = flat->var_of_symbol.find(s); it != flat->var_of_symbol.end() &&
                                                 flat->vars[it->second].role != VarRole::Variable &&
                                                 flat->vars[it->second].role != VarRole::Discrete)
        flat->mark_compile_time(
            s, fmt::format("the start values' check against the constraint at {}:{}:{}", at.file,
                           at.line, at.col));
  }
  // the initial equations and free starts are solved below into v0: the parameters they read
  // are compile-time, and so are the start values
  const bool initial_problem = has_initial_problem(*dae);
  if (initial_problem) {
    mark_initial_parameters(*dae, *flat);
    m->start_compile_time =
        "the compiler solved the initial equations and the free start values (fixed = false)";
  }
  set_parameter_info(*flat, cx, sources, *m);
  for (const FlatVar& v : flat->vars) {
    if (v.role != VarRole::Input) continue;
    m->inputs.push_back({v.name, source_ref(sources, v.span, v.name)});
    m->input_slot.push_back(static_cast<int32_t>(v.symbol));
  }
  m->n_v = static_cast<int32_t>(cx.symbol_count());

  // initial symbol vector: parameters, then start values from the initial_values kernel
  m->v0.assign(m->n_v, 0.0);
  for (const auto& [s, x] : param_value) m->v0[s] = x;
  for (size_t i = 0; i < m->pre_slot.size(); ++i)  // pre(x) = x outside events
    m->v0[m->pre_slot[i]] = m->v0[m->pre_value_slot[i]];
  std::vector<double> start(static_cast<size_t>(m->initial_values.n_out));
  int32_t st = m->initial_values(m->v0.data(), start.data());
  size_t k = 0;
  auto put = [&](int32_t slot, const std::string& name, Span span) {
    if (!std::isfinite(start[k])) diags.report(DiagKind::nonfinite_start, span, {name});
    m->v0[slot] = start[k++];
  };
  (void)st;
  for (int32_t i = 0; i < m->n_q; ++i) put(m->q_slot[i], m->q[i].name, dae->q[i].span);
  for (int32_t i = 0; i < m->n_q; ++i)
    put(m->qd_slot[i], "der(" + m->q[i].name + ")", dae->q[i].span);
  for (int32_t i = 0; i < m->n_y; ++i) put(m->y_slot[i], m->y[i].name, dae->y[i].span);
  for (int32_t i = 0; i < m->n_z; ++i) put(m->z_slot[i], m->z[i].name, dae->z[i].span);
  if (diags.has_errors()) return finish(false);
  if (initial_problem) {
    if (!solve_initial_problem(*dae, cx, m->v0, diags)) return finish(false);
    m->v0.resize(static_cast<size_t>(m->n_v));
  }

  // multipliers of the mechanics' position constraints are known as such (the solver accepts
  // their update once it stagnates, see CompiledModel::z_level); the others are inferred
  {
    bool any = false;
    std::vector<rt::EquationLevel> level = rt::multiplier_levels(*m);
    for (size_t i = 0; i < dae->z.size(); ++i) {
      auto it = flat->var_of_symbol.find(dae->z[i].symbol);
      if (it == flat->var_of_symbol.end() || !flat->vars[it->second].multiplier) continue;
      level[i] = rt::EquationLevel::Position;
      any = true;
    }
    if (any) m->z_level = std::move(level);
    // the recursive form's auxiliaries (FlatVar::auxiliary)
    std::vector<rt::EquationLevel> aux(dae->z.size(), rt::EquationLevel::Algebraic);
    bool any_aux = false;
    for (size_t i = 0; i < dae->z.size(); ++i) {
      auto it = flat->var_of_symbol.find(dae->z[i].symbol);
      if (it == flat->var_of_symbol.end()) continue;
      aux[i] = flat->vars[it->second].auxiliary;
      any_aux |= aux[i] != rt::EquationLevel::Algebraic;
    }
    if (any_aux) m->z_auxiliary = std::move(aux);
  }

  // constraints must hold at the start (position and velocity level); with
  // project_start_velocities, velocities that do not are projected on the constraints
  {
    std::vector<double> r(m->n_eq());
    m->residual(m->v0.data(), r.data());
    std::vector<sym::Expr> rate(m->n_eq(), nullptr);   // d/dt of the position-level rows
    std::vector<std::pair<int32_t, double>> violated;  // position rows, d/dt residual
    // the symbol values of the start, rebuilt when the projection changes the velocities (one
    // copy for all rows: a copy per row made the check quadratic in the model's size)
    std::vector<double> at_start;
    const auto take_start = [&] {
      at_start.assign(m->v0.begin(), m->v0.end());
      at_start.resize(cx.symbol_count(), 0.0);
    };
    take_start();
    const auto velocity_residual = [&](int32_t i) { return sym::evaluate(rate[i], at_start); };
    for (int32_t i = 0; i < m->n_eq(); ++i) {
      auto level = m->eq_level[i];
      if (level != rt::EquationLevel::Position && level != rt::EquationLevel::Velocity) continue;
      if (!std::isfinite(r[i]) || std::fabs(r[i]) > 1e-9) {
        diags.report(DiagKind::inconsistent_start, dae->equations[i].span,
                     {fmt::format("{:.6g}", r[i])});
        diags.help(
            "choose start values that satisfy the constraint; mbs does not move them unless they "
            "are declared fixed = false");
        continue;
      }
      if (level != rt::EquationLevel::Position) continue;
      // the velocities must satisfy the differentiated constraint too
      rate[i] = dae->equations[i].velocity_residual
                    ? dae->equations[i].velocity_residual
                    : ders.total_derivative(dae->equations[i].residual);
      const double rd = velocity_residual(i);
      if (std::isfinite(rd) && std::fabs(rd) <= 1e-9) continue;
      violated.emplace_back(i, rd);
      if (options.project_start_velocities && std::isfinite(rd)) continue;
      diags.report(DiagKind::inconsistent_start_velocity, dae->equations[i].span,
                   {fmt::format("{:.6g}", rd)});
      diags.help(
          "the start values of the velocities (der of the coordinates) must be tangent to the "
          "constraint; mbs does not move them unless they are declared fixed = false (solved "
          "with the constraints) or --project-start-velocities is given (mass-weighted "
          "projection)");
    }
    if (diags.has_errors()) return finish(false);
    if (!violated.empty()) {
      const Span at = dae->equations[violated.front().first].span;
      std::vector<int32_t> keep;
      for (int32_t j = 0; j < m->n_q; ++j)
        if (dae->q[j].fixed_start_der) keep.push_back(j);
      const std::vector<double> before(m->v0);
      const std::string why = rt::project_velocities_by_impulse(*m, m->v0, keep);
      take_start();
      double worst = 0.0;
      for (int32_t i = 0; i < m->n_eq() && why.empty(); ++i)
        if (rate[i]) worst = std::max(worst, std::fabs(velocity_residual(i)));
      if (!why.empty() || !(worst <= 1e-9)) {
        diags.report(DiagKind::inconsistent_start_velocity, at,
                     {fmt::format("{:.6g}", violated.front().second)});
        diags.note(at, why.empty() ? fmt::format("after the mass-weighted projection with the "
                                                 "velocities declared fixed = true kept, the "
                                                 "residual is {:.6g}",
                                                 worst)
                                   : "the projection cannot be made: " + why);
        diags.help(
            "free the velocities that must change (fixed = false), or give consistent "
            "start velocities");
        return finish(false);
      }
      diags.report(DiagKind::start_velocities_projected, at,
                   {fmt::format("{:.6g}", violated.front().second)});
      std::string changes;
      for (int32_t j = 0; j < m->n_q; ++j) {
        const auto s = static_cast<size_t>(m->qd_slot[j]);
        if (m->v0[s] == before[s]) continue;
        changes += fmt::format("{}der({}) {:.6g} -> {:.6g}", changes.empty() ? "" : ", ",
                               m->q[j].name, before[s], m->v0[s]);
      }
      diags.note(at, "changed: " + (changes.empty() ? std::string("nothing") : changes));
      if (!keep.empty()) {
        std::string kept;
        for (int32_t j : keep) kept += (kept.empty() ? "" : ", ") + ("der(" + m->q[j].name + ")");
        diags.note(at, "kept (fixed = true): " + kept);
      }
    }
  }

  // Everything the model needs at run time is in it and in the JIT: the passes' structures and
  // the symbolic context go, before the model cache is written and while the model runs (for
  // 10^5 equations some 190 MB, which the cache's image and object files would come on top of).
  flat.reset();
  dae.reset();
  context = nullptr;
  state->cx.reset();
  release_freed_memory();
  m->code_owner = state;
  result.model = m;
  // the copies of the object files (the JIT owns the code) go to the cache and the caller
  std::vector<std::string> objects = state->jit->take_object_files();
  if (model_cache) {  // best effort: a cache that cannot be written is no error
    std::vector<LibraryProbe> probes;
    for (const ClassLoader::Probe& p : loader.probes()) {
      LibraryProbe lp{p.path, p.found, {}};
      for (uint32_t id = 1; p.found && id <= sources.file_count(); ++id)
        if (sources.path(id) == p.path) lp.text_hash = text_hash(sources.text(id));
      probes.push_back(std::move(lp));
    }
    CachedCompile c;
    c.model = m;
    // the model's own diagnostics (warnings), not those about the caches
    std::ostringstream warnings, notes;
    std::set<DiagKind> kinds;
    for (const Diagnostic& d : diags.diagnostics()) {
      if (d.kind == DiagKind::cache_entry_damaged || d.kind == DiagKind::cache_entry_undeletable ||
          d.kind == DiagKind::model_cache_entry_damaged ||
          d.kind == DiagKind::model_cache_entry_undeletable)
        continue;
      render_diagnostic(shown_only_when_verbose(d.kind) ? notes : warnings, sources, d);
      kinds.insert(d.kind);
    }
    c.warnings = warnings.str();
    c.notes = notes.str();
    for (DiagKind kind : diags.kinds_seen())
      if (kinds.count(kind)) c.diagnostic_kinds.push_back(diag_info(kind).name);
    c.kernel_sizes = result.kernel_sizes;
    (void)write_model_cache(cache_dir, model_key, probes, c, objects);
  }
  if (options.keep_object_files) result.object_files = std::move(objects);
  for (uint32_t id = 1; id <= sources.file_count(); ++id) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(sources.path(id), ec))
      result.source_files.push_back(sources.path(id));
  }
  return finish(true);
}

}  // namespace mbs
