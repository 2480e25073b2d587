#include "compiler/driver/Studies.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <map>
#include <ostream>
#include <set>

#include "compiler/driver/Objectives.h"
#include "runtime/drivers/Batch.h"
#include "runtime/drivers/Mpi.h"
#include "runtime/drivers/Variation.h"
#include "runtime/io/Interrupt.h"

namespace mbs {

std::vector<rt::StudyVariable> study_variables(const rt::CompiledModel& model,
                                               const std::vector<std::string>& names) {
  std::vector<rt::StudyVariable> vars;
  for (const auto& n : names) {
    rt::StudyVariable v;
    v.name = n;
    bool is_parameter = false;
    for (const auto& p : model.parameters) is_parameter = is_parameter || p.name == n;
    v.start = !is_parameter;
    vars.push_back(v);
  }
  return vars;
}

namespace {

// The evaluator of a session's study: the objectives compiled with the model, variants for
// compile-time values from the session.
std::unique_ptr<rt::Evaluator> make_evaluator(Session& session,
                                              const std::vector<std::string>& names,
                                              const std::vector<RangeSpec>& ranges,
                                              const StudyOptions& options, std::ostream& diag_out,
                                              StudyReport& report) {
  const auto model = session.model();
  ObjectivesResult compiled = compile_objectives(*model, options.objectives, "", diag_out);
  std::vector<rt::Objective> objectives = std::move(compiled.objectives);
  if (!compiled.ok) {
    report.model_error = true;
    report.error = "the objectives have errors";
    return nullptr;
  }
  rt::ModelProvider provider = [&session](const std::map<std::string, double>& p,
                                          const std::map<std::string, double>& s,
                                          std::string& error) {
    auto m = session.compiled_model_for(p, s);
    if (!m) error = "the model did not compile with these values (see the diagnostics above)";
    return m;
  };
  try {
    std::vector<rt::StudyVariable> vars = study_variables(*model, names);
    for (size_t i = 0; i < ranges.size() && i < vars.size(); ++i) {
      vars[i].lower = ranges[i].lower;
      vars[i].upper = ranges[i].upper;
    }
    return std::make_unique<rt::Evaluator>(model, std::move(vars), std::move(objectives),
                                           session.options(), options.analysis, provider);
  } catch (const std::exception& e) {
    report.error = e.what();
    return nullptr;
  }
}

// A worker rank of an MPI job (docs/studies.md, "Across machines: MPI"): evaluates the runs rank 0
// sends until rank 0 has finished the study; no file, no rows, nothing to report.
StudyReport serve_rank_0(const rt::Evaluator& evaluator, StudyReport report) {
  rt::mpi_serve(&evaluator);
  report.ok = true;
  return report;
}

}  // namespace

StudyReport run_variation(Session& session, const VariationOptions& variation,
                          const StudyOptions& options, std::ostream& diag_out,
                          rt::ProgressSink* progress) {
  StudyReport report;
  const auto start = std::chrono::steady_clock::now();
  if (!session.model()) {
    report.error = "no model compiled";
    return report;
  }
  std::vector<rt::VariationAxis> axes;
  std::vector<std::vector<double>> points;
  std::vector<std::string> names;
  try {
    for (const auto& a : variation.axes) axes.push_back(rt::parse_variation_axis(a));
    std::set<std::string> seen;
    for (const auto& a : axes) {
      if (!seen.insert(a.name).second)
        throw std::invalid_argument("'" + a.name + "' is varied twice");
      names.push_back(a.name);
    }
    points = rt::variation_points(axes, variation.paired);
  } catch (const std::exception& e) {
    report.error = e.what();
    return report;
  }
  auto evaluator = make_evaluator(session, names, {}, options, diag_out, report);
  if (!evaluator) return report;
  if (rt::mpi_worker()) return serve_rank_0(*evaluator, report);  // MPI: rank 0 writes the file
  rt::StudyDescription d;
  d.kind = "variation";
  d.variables = names;
  d.objectives = options.objectives;
  d.total = static_cast<int64_t>(points.size());
  d.minimize = options.objectives.empty() ? -1 : 0;
  report.total = d.total;
  std::unique_ptr<rt::StudyFile> file;
  std::vector<bool> finished(points.size(), false);
  try {
    file = std::make_unique<rt::StudyFile>(options.output, d, options.resume);
    for (const rt::StudyRow& r : file->previous_rows()) {
      if (r.run < 0 || r.run >= d.total)
        throw std::runtime_error(
            fmt::format("cannot resume '{}': run {} is not a run of this study ({} runs)",
                        options.output, r.run, d.total));
      const auto& p = points[static_cast<size_t>(r.run)];
      for (size_t j = 0; j < p.size(); ++j)
        if (r.values[j] != p[j])
          throw std::runtime_error(
              fmt::format("cannot resume '{}': run {} has {} = {}, this study's run {} has {}",
                          options.output, r.run, names[j], r.values[j], r.run, p[j]));
      if (r.status == "ok" || r.status == "failed") {
        // a study writes each finished run once: a second row is an edited file or two
        // studies writing one file, and which row counts cannot be told
        if (finished[static_cast<size_t>(r.run)])
          throw std::runtime_error(fmt::format(
              "cannot resume '{}': run {} is in the file twice (a study writes each run once: "
              "the file was edited, or two studies wrote to it); delete one of its rows, or "
              "run the study afresh without --resume",
              options.output, r.run));
        ++report.resumed;
        finished[static_cast<size_t>(r.run)] = true;
      }
    }
  } catch (const std::exception& e) {
    report.error = e.what();
    return report;
  }
  // the best so far over the resumed rows too
  for (const rt::StudyRow& r : file->previous_rows())
    if (r.status == "ok" && !r.objectives.empty())
      report.consider(r.run, r.objectives[0], r.values);
  rt::ProgressMeter meter;
  meter.start(progress, "variation", "runs", 0.0, static_cast<double>(d.total));
  meter.set_unit("runs");
  int64_t done = report.resumed;
  // Rows are written in run order: a run that finishes before an earlier one waits here (at
  // most about one per thread), so the file is the same with any number of threads. On an
  // interrupt the waiting rows are written at once (resume reads any order).
  std::map<size_t, rt::RunOutcome> waiting;
  size_t next = 0;
  const auto write = [&](size_t i, const rt::RunOutcome& r) {
    file->write(static_cast<int64_t>(i), {}, points[i], r);
    ++report.run_now;
    if (r.status == rt::RunOutcome::Status::Failed) ++report.failed;
    if (r.status == rt::RunOutcome::Status::Ok)
      report.consider(static_cast<int64_t>(i), rt::objective_value(r, 0), points[i]);
  };
  const auto flush = [&]() {
    while (next < points.size()) {
      if (finished[next]) {
        ++next;
        continue;
      }
      auto it = waiting.find(next);
      if (it == waiting.end()) break;
      write(next, it->second);
      waiting.erase(it);
      ++next;
    }
  };
  try {
    rt::run_parallel(
        *evaluator, points, options.threads,
        [&](size_t i, const rt::RunOutcome& r) {
          if (r.status == rt::RunOutcome::Status::Interrupted) return;
          waiting.emplace(i, r);
          flush();
          ++done;
          meter.tick(static_cast<double>(done), 0.0);
        },
        [&](size_t i) { return finished[i]; });
    for (const auto& [i, r] : waiting) write(i, r);
  } catch (const std::exception& e) {
    meter.finish();
    report.error = e.what();
    return report;
  }
  meter.finish();
  report.interrupted = rt::interrupt_requested();
  report.ok = true;
  report.wall_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return report;
}

RangeSpec parse_range(const std::string& text) {
  RangeSpec r;
  const size_t eq = text.find('=');
  r.name = text.substr(0, eq);
  if (r.name.empty())
    throw std::invalid_argument("'" + text + "': expected NAME=LOWER:UPPER[:START] or NAME");
  if (eq == std::string::npos) return r;
  std::vector<double> x;
  std::string rest = text.substr(eq + 1);
  size_t start = 0;
  for (;;) {
    const size_t c = rest.find(':', start);
    const std::string part = rest.substr(start, c == std::string::npos ? c : c - start);
    char* end = nullptr;
    const double v = std::strtod(part.c_str(), &end);
    if (part.empty() || *end != '\0' || !std::isfinite(v))
      throw std::invalid_argument("'" + text + "': '" + part + "' is not a finite number");
    x.push_back(v);
    if (c == std::string::npos) break;
    start = c + 1;
  }
  if (x.size() < 2 || x.size() > 3)
    throw std::invalid_argument("'" + text +
                                "': expected NAME=LOWER:UPPER or NAME=LOWER:UPPER:START");
  r.lower = x[0];
  r.upper = x[1];
  if (!(r.lower < r.upper))
    throw std::invalid_argument("'" + text + "': the lower bound must be below the upper");
  if (x.size() == 3) {
    r.start = x[2];
    if (r.start < r.lower || r.start > r.upper)
      throw std::invalid_argument("'" + text + "': the start lies outside the bounds");
  }
  return r;
}

namespace {

// What an optimisation and a sensitivity study share: the file, the rows, the best so far.
struct StudyRun {
  StudyReport& report;
  std::unique_ptr<rt::StudyFile> file;
  rt::ProgressMeter meter;
  int64_t done = 0;
  int objective = 0;

  StudyRun(StudyReport& r) : report(r) {}
  void record(const rt::EvaluationRecord& e, std::span<const double> extra) {
    const rt::RunOutcome& o = *e.outcome;
    file->write(static_cast<int64_t>(e.index), extra, e.point, o);
    ++report.run_now;
    if (o.status != rt::RunOutcome::Status::Ok) ++report.failed;
    const double v = rt::objective_value(o, objective);
    if (!e.finite_difference) report.consider(static_cast<int64_t>(e.index), v, e.point);
    meter.tick(static_cast<double>(++done), 0.0);
  }
};

}  // namespace

StudyReport run_optimization(Session& session, const OptimizeOptions& optimize,
                             const StudyOptions& options, std::ostream& diag_out,
                             rt::ProgressSink* progress) {
  StudyReport report;
  const auto start = std::chrono::steady_clock::now();
  if (!session.model()) {
    report.error = "no model compiled";
    return report;
  }
  if (options.objectives.empty()) {
    report.error = "an optimisation needs an --objective (the first is minimised)";
    return report;
  }
  if (options.resume) {
    report.error =
        "an optimisation cannot be resumed (its next points depend on every result before); "
        "run it again with the same --seed to repeat it";
    return report;
  }
  std::vector<RangeSpec> ranges;
  std::vector<std::string> names;
  try {
    for (const auto& t : optimize.ranges) {
      ranges.push_back(parse_range(t));
      if (std::isnan(ranges.back().lower))
        throw std::invalid_argument("'" + t + "': an optimisation needs bounds NAME=LOWER:UPPER");
      names.push_back(ranges.back().name);
    }
    if (names.empty())
      throw std::invalid_argument("an optimisation needs --range NAME=LOWER:UPPER");
  } catch (const std::exception& e) {
    report.error = e.what();
    return report;
  }
  std::unique_ptr<rt::Evaluator> evaluator;
  try {
    evaluator = make_evaluator(session, names, ranges, options, diag_out, report);
  } catch (const std::exception& e) {
    report.error = e.what();
  }
  if (!evaluator) return report;
  if (rt::mpi_worker()) return serve_rank_0(*evaluator, report);  // MPI: rank 0 runs the optimiser
  const bool genetic = optimize.kind == OptimizerKind::Genetic;
  rt::StudyDescription d;
  d.kind = genetic ? "genetic" : "minimize";
  d.extra = genetic ? std::vector<std::string>{"generation"}
                    : std::vector<std::string>{"iteration", "fd"};
  d.variables = names;
  d.objectives = options.objectives;
  d.minimize = 0;
  if (genetic)
    d.total =
        optimize.genetic.initial_population + static_cast<int64_t>(optimize.genetic.population) *
                                                  std::max(0, optimize.genetic.generations - 1);
  StudyRun run(report);
  try {
    run.file = std::make_unique<rt::StudyFile>(options.output, d, false);
  } catch (const std::exception& e) {
    report.error = e.what();
    return report;
  }
  report.total = d.total;
  run.meter.start(progress, d.kind, "runs", 0.0, d.total > 0 ? static_cast<double>(d.total) : 0.0);
  run.meter.set_unit("runs");
  const rt::BatchEvaluator batch = rt::parallel_batch(*evaluator, options.threads);
  try {
    if (genetic) {
      auto r = rt::genetic_optimize(batch, evaluator->variables(), optimize.genetic,
                                    [&](const rt::EvaluationRecord& e) {
                                      const double g = e.round;
                                      run.record(e, std::span<const double>(&g, 1));
                                    });
      report.interrupted = r.interrupted;
      report.message = fmt::format("seed {}, {} generations", r.seed, r.generations);
    } else {
      rt::MinimizeOptions m = optimize.minimize;
      if (m.start.empty()) {
        for (const auto& r : ranges)
          m.start.push_back(std::isnan(r.start) ? 0.5 * (r.lower + r.upper) : r.start);
      }
      // gradient methods: exact sensitivities when the model has them, else central differences
      rt::GradientFunction exact;
      if (optimize.exact_gradient && session.model()->has_sensitivities()) {
        exact = [&](const std::vector<double>& x) {
          rt::PointGradient pg;
          std::vector<std::vector<double>> g;
          pg.outcome = evaluator->evaluate_with_gradient(x, g);
          pg.interrupted = pg.outcome.status == rt::RunOutcome::Status::Interrupted;
          if (!g.empty()) pg.gradient = g[static_cast<size_t>(m.objective)];
          return pg;
        };
      }
      auto r = rt::minimize(
          batch, evaluator->variables(), m,
          [&](const rt::EvaluationRecord& e) {
            const double extra[2] = {static_cast<double>(e.round), e.finite_difference ? 1.0 : 0.0};
            run.record(e, extra);
          },
          exact);
      report.interrupted = r.interrupted;
      report.message = fmt::format("{}: {}, {} objective evaluations",
                                   rt::minimize_method_name(m.method), r.status, r.evaluations);
    }
  } catch (const std::exception& e) {
    run.meter.finish();
    report.error = e.what();
    return report;
  }
  run.meter.finish();
  report.total = run.done;
  report.ok = true;
  report.wall_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return report;
}

SensitivityReport run_sensitivity(Session& session, const std::vector<std::string>& names,
                                  const rt::SensitivityOptions& sensitivity, bool exact,
                                  const StudyOptions& options, std::ostream& diag_out,
                                  rt::ProgressSink* progress) {
  SensitivityReport out;
  StudyReport& report = out.study;
  const auto start = std::chrono::steady_clock::now();
  if (!session.model()) {
    report.error = "no model compiled";
    return out;
  }
  if (options.objectives.empty()) {
    report.error = "sensitivities need an --objective (d objective / d variable)";
    return out;
  }
  std::vector<RangeSpec> ranges;
  try {
    for (const auto& t : names) {
      ranges.push_back(parse_range(t));
      out.variables.push_back(ranges.back().name);
    }
  } catch (const std::exception& e) {
    report.error = e.what();
    return out;
  }
  std::unique_ptr<rt::Evaluator> evaluator;
  try {
    evaluator = make_evaluator(session, out.variables, ranges, options, diag_out, report);
  } catch (const std::exception& e) {
    report.error = e.what();
  }
  if (!evaluator) return out;
  if (rt::mpi_worker()) {  // MPI: rank 0 computes the differences
    out.study = serve_rank_0(*evaluator, report);
    return out;
  }
  // the point: the session's current values (the model's, with --set / --start)
  std::vector<double> x;
  try {
    rt::Instance& inst = session.instance();
    const auto& v = inst.start_vector();
    for (const auto& var : evaluator->variables()) {
      if (!var.start) {
        x.push_back(inst.parameter(var.name));
        continue;
      }
      int32_t slot = -1;
      const auto& m = *session.model();
      for (int32_t i = 0; i < m.n_q; ++i)
        if (m.q[i].name == var.name) slot = m.q_slot[i];
      for (int32_t i = 0; i < m.n_y; ++i)
        if (m.y[i].name == var.name) slot = m.y_slot[i];
      if (slot < 0)
        throw std::invalid_argument("sensitivities with respect to the start value of '" +
                                    var.name + "': only coordinates' start values are supported");
      x.push_back(v[static_cast<size_t>(slot)]);
    }
  } catch (const std::exception& e) {
    report.error = e.what();
    return out;
  }
  rt::StudyDescription d;
  d.kind = "sensitivity";
  d.extra = {"fd"};
  d.variables = out.variables;
  d.objectives = options.objectives;
  d.total = exact ? 1 : 1 + 2 * static_cast<int64_t>(x.size());
  StudyRun run(report);
  run.objective = -1;
  try {
    run.file = std::make_unique<rt::StudyFile>(options.output, d, false);
  } catch (const std::exception& e) {
    report.error = e.what();
    return out;
  }
  report.total = d.total;
  run.meter.start(progress, "sensitivity", "runs", 0.0, static_cast<double>(d.total));
  run.meter.set_unit("runs");
  if (exact) {
    // one run with the sensitivities of the discrete solution
    try {
      std::vector<std::vector<double>> g;
      rt::RunOutcome o = evaluator->evaluate_with_gradient(x, g);
      const rt::EvaluationRecord e{0, 0, false, x, &o};
      const double fd = 0.0;
      run.record(e, std::span<const double>(&fd, 1));
      if (o.status != rt::RunOutcome::Status::Ok) throw std::runtime_error(o.message);
      out.result.reference = x;
      out.result.points = {x};
      out.result.outcomes = {o};
      out.result.reference_objectives = o.objectives;
      out.result.derivative = g;
      out.exact = true;
    } catch (const std::exception& e) {
      run.meter.finish();
      report.error = e.what();
      return out;
    }
    run.meter.finish();
    report.ok = true;
    report.wall_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    return out;
  }
  try {
    out.result = rt::compute_sensitivities(rt::parallel_batch(*evaluator, options.threads),
                                           evaluator->variables(), x, sensitivity,
                                           [&](const rt::EvaluationRecord& e) {
                                             const double fd = e.finite_difference ? 1.0 : 0.0;
                                             run.record(e, std::span<const double>(&fd, 1));
                                           });
  } catch (const std::exception& e) {
    run.meter.finish();
    report.error = e.what();
    return out;
  }
  run.meter.finish();
  report.interrupted = out.result.interrupted;
  report.ok = true;
  report.wall_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace mbs
