#include "runtime/solvers/Failure.h"

#include <fmt/format.h>

#include <cmath>

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
    } else if (!std::isnan(f.update)) {
      what = fmt::format(" has the largest Newton update ({:.3g} x its tolerance)", f.update);
    }
    out += fmt::format("note: unknown '{}'{}{}\n", unknown_name(m, f.unknown),
                       src.empty() ? "" : " (declared at " + src + ")", what);
  }
  return out;
}

std::string render_failure(const FailureRecord& f, const CompiledModel& m) {
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
  out += fmt::format("help: {}\n", failure_hint(f.kind));
  return out;
}

}  // namespace mbs::rt
