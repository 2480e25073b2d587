#include "runtime/solvers/Failure.h"

#include <fmt/format.h>

#include <cmath>

#include "runtime/solvers/Options.h"

namespace mbs::rt {

namespace {

struct FailureInfo {
  std::string_view name, summary, hint;
};

constexpr FailureInfo kFailures[] = {
#define MBS_X(kind, summary, hint) {#kind, summary, hint},
    MBS_SOLVER_FAILURES(MBS_X)
#undef MBS_X
};

const FailureInfo& info(FailureKind k) {
  return kFailures[static_cast<size_t>(k)];
}

std::string location(const SourceRef& s) {
  if (s.file.empty()) return {};
  if (s.line == 0) return s.file;
  if (s.col == 0) return fmt::format("{}:{}", s.file, s.line);
  return fmt::format("{}:{}:{}", s.file, s.line, s.col);
}

const Unknown* find_unknown(const CompiledModel& m, int32_t i, char& kind, int32_t& index) {
  if (i < 0) return nullptr;
  if (i < m.n_q) {
    kind = 'q', index = i;
    return static_cast<size_t>(i) < m.q.size() ? &m.q[i] : nullptr;
  }
  i -= m.n_q;
  if (i < m.n_y) {
    kind = 'y', index = i;
    return static_cast<size_t>(i) < m.y.size() ? &m.y[i] : nullptr;
  }
  i -= m.n_y;
  kind = 'z', index = i;
  return i < m.n_z && static_cast<size_t>(i) < m.z.size() ? &m.z[i] : nullptr;
}

}  // namespace

std::string_view failure_kind_name(FailureKind kind) {
  return info(kind).name;
}
std::string_view failure_summary(FailureKind kind) {
  return info(kind).summary;
}
std::string_view failure_hint(FailureKind kind) {
  return info(kind).hint;
}

namespace {
// The implicit integrators: advice to use one is no advice for a run that already does.
bool implicit_solver(std::string_view solver) {
  for (SolverKind k : {SolverKind::GenAlpha, SolverKind::Newmark, SolverKind::Trapezoidal})
    if (solver == solver_name(k)) return true;
  return false;
}
}  // namespace

std::string failure_hint_for(FailureKind kind, std::string_view solver) {
  if (!implicit_solver(solver)) return std::string(failure_hint(kind));
  switch (kind) {
    case FailureKind::Diverged:
      return fmt::format(
          "the model may blow up (a finite-time singularity, or an instability of the model at "
          "these parameters and start values: check them); {} is implicit, so a smaller --step "
          "follows the growth more closely but does not stop it; --divergence-limit sets the "
          "bound",
          solver);
    case FailureKind::TooManyRejections:
      return "the step keeps failing and shrinking (a discontinuity, a singular position, or "
             "tolerances the method cannot meet): a smaller --step, looser --rtol/--atol, or "
             "raise --max-rejections";
    case FailureKind::StepCollapsed:
      return "the step cannot shrink further: t + h can hardly be told from t; a singularity or "
             "a discontinuity at this time: check the model near this time, or loosen "
             "--rtol/--atol";
    default:
      return std::string(failure_hint(kind));
  }
}

std::string render_event_failure(const FailureRecord& f, std::string_view notes) {
  return fmt::format("error: {}: {} at t = {}\n{}help: {}\n", f.solver, failure_summary(f.kind),
                     f.t, notes, failure_hint_for(f.kind, f.solver));
}

std::string unknown_name(const CompiledModel& m, int32_t i) {
  char kind = '?';
  int32_t index = -1;
  const Unknown* u = find_unknown(m, i, kind, index);
  if (u && !u->name.empty()) return u->name;
  return fmt::format("{}[{}]", kind, index);
}

std::string unknown_source(const CompiledModel& m, int32_t i) {
  char kind = '?';
  int32_t index = -1;
  const Unknown* u = find_unknown(m, i, kind, index);
  return u ? location(u->source) : std::string();
}

std::string equation_text(const CompiledModel& m, int32_t i) {
  if (i < 0 || static_cast<size_t>(i) >= m.eq_source.size()) return fmt::format("equation {}", i);
  const SourceRef& s = m.eq_source[i];
  const std::string loc = location(s);
  if (loc.empty() && s.text.empty()) return fmt::format("equation {}", i);
  if (loc.empty()) return s.text;
  if (s.text.empty()) return loc;
  return fmt::format("{}: {}", loc, s.text);
}

std::string render_failure_notes(const FailureRecord& f, const CompiledModel& m) {
  std::string out;
  if (f.kernel_status < 0) {
    out += fmt::format("note: the model function returned status {}\n", f.kernel_status);
  }
  if (f.equation >= 0) {
    out += fmt::format("note: equation {} (residual {:.6g}): {}\n", f.equation, f.residual,
                       equation_text(m, f.equation));
  }
  if (f.unknown >= 0) {
    const std::string src = unknown_source(m, f.unknown);
    std::string what;
    if (f.kind == FailureKind::SingularMatrix) {
      what = " has no pivot: its column depends linearly on the others";
    } else if (f.kind == FailureKind::NonFiniteJacobian) {
      what = " is the column of that entry";
    } else if (f.kind == FailureKind::ErrorTestFailed && !std::isnan(f.update)) {
      what = fmt::format(" has the largest error estimate ({:.3g} x its tolerance)", f.update);
    } else if (!std::isnan(f.update)) {
      what = fmt::format(" has the largest Newton update ({:.3g} x its tolerance)", f.update);
    }
    out += fmt::format("note: unknown '{}'{}{}\n", unknown_name(m, f.unknown),
                       src.empty() ? "" : " (declared at " + src + ")", what);
  }
  return out;
}

std::string state_component_name(const CompiledModel& m, int32_t j) {
  if (j < m.n_q) return unknown_name(m, j);
  if (j < 2 * m.n_q) return "der(" + unknown_name(m, j - m.n_q) + ")";
  return unknown_name(m, j - m.n_q);
}

namespace {

std::string state_component_source(const CompiledModel& m, int32_t j) {
  return unknown_source(m, j < m.n_q ? j : j - m.n_q);
}

std::string output_name(const CompiledModel& m, int32_t k) {
  if (k >= 0 && static_cast<size_t>(k) < m.output_names.size()) return m.output_names[k];
  return fmt::format("output {}", k);
}

const OutputSource* output_source(const CompiledModel& m, int32_t k) {
  if (k < 0 || static_cast<size_t>(k) >= m.output_source.size()) return nullptr;
  return &m.output_source[k];
}

std::string with_text(const SourceRef& s) {
  const std::string loc = location(s);
  if (loc.empty()) return s.text;
  if (s.text.empty()) return loc;
  return loc + ": " + s.text;
}

// The summary line of a step failure.
std::string step_headline(const FailureRecord& f) {
  return fmt::format("error: {}: {} in the step from t = {} with h = {:.6g}\n", f.solver,
                     failure_summary(f.kind), f.t, f.h);
}

}  // namespace

std::string output_origin(const CompiledModel& m, int32_t k) {
  const std::string name = output_name(m, k);
  const OutputSource* s = output_source(m, k);
  if (!s) return fmt::format("'{}' is column {} of the result", name, k + 1);
  switch (s->kind) {
    case OutputSource::Kind::Explicit:
      return fmt::format(
          "'{}' is defined by the equation {} (an explicit auxiliary the compiler eliminated and "
          "computes after each step)",
          name, with_text(s->definition));
    case OutputSource::Kind::Alias:
      return fmt::format("'{}' is an alias defined by the equation {}", name,
                         with_text(s->definition));
    case OutputSource::Kind::Unknown:
      break;
  }
  const std::string loc = location(s->declaration);
  return fmt::format("'{}'{} is a solved unknown", name,
                     loc.empty() ? "" : " (declared at " + loc + ")");
}

namespace {
// "t = 0.5" or "load factor 0.5"
std::string where(FailureAxis axis, double t) {
  return axis == FailureAxis::Load ? fmt::format("load factor {}", t) : fmt::format("t = {}", t);
}
}  // namespace

FailureRecord nonfinite_output_failure(const CompiledModel& m, std::span<const double> outputs,
                                       std::string_view solver, double t, double h,
                                       FailureAxis axis) {
  FailureRecord f;
  f.kind = FailureKind::NonFiniteOutput;
  f.phase = FailurePhase::Step;
  f.solver = solver;
  f.axis = axis;
  f.t = t;
  f.h = h;
  // rank: explicit definition 0, solved unknown 1, alias 2 (its value is wrong elsewhere)
  int32_t best_rank = 3;
  for (size_t k = 0; k < outputs.size(); ++k) {
    if (std::isfinite(outputs[k])) continue;
    ++f.count;
    const OutputSource* s = output_source(m, static_cast<int32_t>(k));
    const int32_t rank = !s                                        ? 1
                         : s->kind == OutputSource::Kind::Explicit ? 0
                         : s->kind == OutputSource::Kind::Unknown  ? 1
                                                                   : 2;
    if (rank < best_rank)
      best_rank = rank, f.output = static_cast<int32_t>(k), f.value = outputs[k];
  }
  std::string& out = f.message;
  out = fmt::format(
      "error: {}: the value of '{}' is {} at {} ({} {:.6g}); a result is never written with a "
      "non-finite value\n",
      solver, output_name(m, f.output), f.value, where(axis, t),
      axis == FailureAxis::Load ? "load step" : "step h =", h);
  out += fmt::format("note: {}\n", output_origin(m, f.output));
  if (f.count > 1) {
    std::string others;
    int32_t listed = 0;
    for (size_t k = 0; k < outputs.size() && listed < 5; ++k) {
      if (std::isfinite(outputs[k]) || static_cast<int32_t>(k) == f.output) continue;
      others += (listed++ ? ", " : "") + output_name(m, static_cast<int32_t>(k));
    }
    if (f.count - 1 > listed) others += ", ...";
    out += fmt::format("note: {} more column(s) are not finite at this point: {}\n", f.count - 1,
                       others);
  }
  out += fmt::format("help: {}\n", failure_hint(f.kind));
  return f;
}

std::string nonfinite_output_warning(const FailureRecord& f, const CompiledModel& m) {
  return fmt::format(
      "warning: {}: the value of '{}' is {} at {} and is written as it is (--nonfinite "
      "warn; {} column(s) at that point; no further warning): {}",
      f.solver, output_name(m, f.output), f.value, where(f.axis, f.t), f.count,
      output_origin(m, f.output));
}

std::string render_failure(const FailureRecord& f, const CompiledModel& m) {
  if (f.kind == FailureKind::NonFiniteOutput) return f.message;
  if (f.kind == FailureKind::Chattering && f.count == 0) {  // seen inside one fixed step
    return fmt::format(
        "error: {}: the solution slides along a switch of the equations (a sliding mode) in the "
        "step from t = {} with h = {:.6g}\n"
        "note: stages of the step were on the other side of an if-expression, abs, sign, min or "
        "max whose argument changes sign, and the step ended on the side it started: the "
        "derivatives of the two sides push the state onto the switch, which a fixed step cannot "
        "follow (the result would stop there)\n"
        "help: end the run before that time, or change the model so that the motion on the "
        "switch is one of its equations (e.g. a state that stays there, or a smooth law such as "
        "tanh(x/eps) instead of the switch)\n",
        f.solver, f.t, f.h);
  }
  if (f.kind == FailureKind::Chattering) {
    std::string out = fmt::format(
        "error: {}: {} at t = {}\nnote: {} events in a row, each within {:.3g} s of the one "
        "before (--chatter-limit)\n",
        f.solver, failure_summary(f.kind), f.t, f.count, f.h);
    if (f.branch >= 0 && static_cast<size_t>(f.branch) < m.branch_source.size()) {
      const SourceRef& s = m.branch_source[static_cast<size_t>(f.branch)];
      const std::string loc = location(s);
      out += fmt::format("note: the last event was 'when {}'{}\n", s.text,
                         loc.empty() ? "" : " at " + loc);
    } else {
      out +=
          "note: the last event was a switch of the equations (an if-expression, abs, sign, "
          "min or max whose argument changes sign); noEvent(...) around it keeps the solvers "
          "from stopping there\n";
    }
    out += fmt::format("help: {}\n", failure_hint(f.kind));
    return out;
  }
  if (f.kind == FailureKind::Diverged || f.kind == FailureKind::TooManyRejections ||
      f.kind == FailureKind::StepCollapsed) {
    std::string out = step_headline(f);
    if (f.state >= 0 && f.kind == FailureKind::Diverged) {
      const std::string src = state_component_source(m, f.state);
      const bool beyond_limit = f.kind == FailureKind::Diverged && !f.has_cause;
      out += fmt::format("note: state component '{}'{} is {:.3g}{}\n",
                         state_component_name(m, f.state),
                         src.empty() ? "" : " (declared at " + src + ")", f.value,
                         beyond_limit ? " after this step, beyond --divergence-limit"
                                      : fmt::format(", {:.3g} times the scale of the start state "
                                                    "({:.3g})",
                                                    f.value / f.scale, f.scale));
    }
    if (f.kind == FailureKind::TooManyRejections) {
      out += fmt::format(
          "note: more than {} step attempts were rejected since the last point of the output "
          "grid (--max-rejections)\n",
          f.count - 1);
    }
    if (f.kind == FailureKind::StepCollapsed) {
      out += fmt::format(
          "note: the step was halved {} times to h = {:.6g}; below {:.6g} = 64 eps max(|t|, "
          "|t_end|) the "
          "time t + h/2 could no longer be told from t\n",
          f.halvings, f.h, f.h_min);
    }
    if (f.has_cause) {
      out += fmt::format("note: the last step attempt failed: {} (h = {:.6g})\n",
                         f.cause == FailureKind::ErrorTestFailed
                             ? "the local error estimate was above the tolerance"
                             : failure_summary(f.cause),
                         f.h);
      FailureRecord cause = f;
      cause.kind = f.cause;
      out += render_failure_notes(cause, m);
    }
    out += fmt::format("help: {}\n", failure_hint_for(f.kind, f.solver));
    return out;
  }
  if (f.kind == FailureKind::EventNotSettled || f.kind == FailureKind::ReinitInconsistent)
    return render_event_failure(f, "");
  std::string out;
  if (f.phase == FailurePhase::InitialValues) {
    out += fmt::format("error: {}: {} while computing consistent initial values at t = {}\n",
                       f.solver, failure_summary(f.kind), f.t);
  } else {
    out += fmt::format("error: {}: {} in the step from t = {} with h = {:.6g}\n", f.solver,
                       failure_summary(f.kind), f.t, f.h);
    if (f.kind != FailureKind::KernelFatal) {
      out += fmt::format(
          "note: the step was halved {} times; a further halving would go below "
          "h_min = {:.6g}\n",
          f.halvings, f.h_min);
    }
  }
  out += render_failure_notes(f, m);
  out += fmt::format("help: {}\n", failure_hint_for(f.kind, f.solver));
  return out;
}

}  // namespace mbs::rt
