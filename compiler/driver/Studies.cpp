#include "compiler/driver/Studies.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <ostream>
#include <set>

#include "compiler/driver/Objectives.h"
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
    return std::make_unique<rt::Evaluator>(model, study_variables(*model, names),
                                           std::move(objectives), session.options(),
                                           options.analysis, provider);
  } catch (const std::exception& e) {
    report.error = e.what();
    return nullptr;
  }
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
  auto evaluator = make_evaluator(session, names, options, diag_out, report);
  if (!evaluator) return report;
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
        if (!finished[static_cast<size_t>(r.run)]) ++report.resumed;
        finished[static_cast<size_t>(r.run)] = true;
      }
    }
  } catch (const std::exception& e) {
    report.error = e.what();
    return report;
  }
  // the best so far over the resumed rows too
  const auto consider = [&](int64_t run, const std::vector<double>& objectives,
                            const std::vector<double>& values) {
    if (objectives.empty() || !std::isfinite(objectives[0])) return;
    if (report.best < 0 || objectives[0] < report.best_value) {
      report.best = run;
      report.best_value = objectives[0];
      report.best_values = values;
    }
  };
  for (const rt::StudyRow& r : file->previous_rows())
    if (r.status == "ok") consider(r.run, r.objectives, r.values);
  rt::ProgressMeter meter;
  meter.start(progress, "variation", "runs", 0.0, static_cast<double>(d.total));
  meter.set_unit("runs");
  int64_t done = report.resumed;
  try {
    rt::run_parallel(
        *evaluator, points, options.threads,
        [&](size_t i, const rt::RunOutcome& r) {
          if (r.status == rt::RunOutcome::Status::Interrupted) return;
          file->write(static_cast<int64_t>(i), {}, points[i], r);
          ++report.run_now;
          if (r.status == rt::RunOutcome::Status::Failed) ++report.failed;
          if (r.status == rt::RunOutcome::Status::Ok)
            consider(static_cast<int64_t>(i), r.objectives, points[i]);
          ++done;
          meter.tick(static_cast<double>(done), 0.0);
        },
        [&](size_t i) { return finished[i]; });
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

}  // namespace mbs
