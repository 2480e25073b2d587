#include "python/src/Convert.h"

#include <fmt/format.h>

namespace mbs::python {

namespace {
py::object error_class(const char* name) {
  return py::module_::import("mbs._errors").attr(name);
}
[[noreturn]] void raise(const char* name, const py::object& exception) {
  PyErr_SetObject(error_class(name).ptr(), exception.ptr());
  throw py::error_already_set();
}
}  // namespace

void raise_usage(const std::string& message) {
  raise("UsageError", error_class("UsageError")(message));
}

void raise_compile_error(const CompileResult& result, const std::string& text) {
  py::object diagnostic = error_class("Diagnostic");
  py::list list;
  for (const DiagnosticRecord& d : result.diagnostics)
    list.append(diagnostic(d.level, d.kind, d.file, d.line, d.column, d.message, d.rendered));
  const char* cls = result.usage_error ? "UsageError" : "ModelError";
  raise(cls, error_class(cls)(text, list));
}

void raise_solver_error(const py::dict& failure) {
  raise("SolverError", error_class("SolverError")(**failure));
}

void write_stderr(const std::string& text) {
  if (text.empty()) return;
  py::object err = py::module_::import("sys").attr("stderr");
  err.attr("write")(text);
  err.attr("flush")();
}

py::array rows_array(std::vector<double>&& data, size_t width) {
  auto* owned = new std::vector<double>(std::move(data));
  py::capsule free_when_done(owned, [](void* p) { delete static_cast<std::vector<double>*>(p); });
  const auto rows = static_cast<py::ssize_t>(width == 0 ? 0 : owned->size() / width);
  const auto w = static_cast<py::ssize_t>(width);
  return py::array_t<double>(
      {rows, w},
      {w * static_cast<py::ssize_t>(sizeof(double)), static_cast<py::ssize_t>(sizeof(double))},
      owned->data(), free_when_done);
}

py::array matrix_array(const Eigen::MatrixXd& m) {
  py::array_t<double> a({static_cast<py::ssize_t>(m.rows()), static_cast<py::ssize_t>(m.cols())});
  auto w = a.mutable_unchecked<2>();
  for (Eigen::Index i = 0; i < m.rows(); ++i)
    for (Eigen::Index j = 0; j < m.cols(); ++j) w(i, j) = m(i, j);
  return a;
}

py::dict statistics_dict(const rt::Statistics& s) {
  py::dict d;
#define MBS_X(name, label) d[#name] = py::int_(s.name);
  MBS_STATISTICS_COUNTERS(MBS_X)
#undef MBS_X
#define MBS_X(name, label) d[#name] = py::float_(s.name);
  MBS_STATISTICS_REALS(MBS_X)
#undef MBS_X
  return d;
}

std::string declared_at(const rt::SourceRef& s) {
  return s.file.empty() ? std::string() : fmt::format("{}:{}", s.file, s.line);
}

double start_value(const rt::CompiledModel& m, rt::Instance& inst, const std::string& name) {
  const std::vector<double>& v = inst.start_vector();
  const auto slot = [&](int32_t k) { return v[static_cast<size_t>(k)]; };
  for (size_t i = 0; i < m.q.size(); ++i) {
    if (m.q[i].name == name) return slot(m.q_slot[i]);
    if ("der(" + m.q[i].name + ")" == name) return slot(m.qd_slot[i]);
  }
  for (size_t i = 0; i < m.y.size(); ++i)
    if (m.y[i].name == name) return slot(m.y_slot[i]);
  for (size_t i = 0; i < m.z.size(); ++i)
    if (m.z[i].name == name) return slot(m.z_slot[i]);
  for (size_t i = 0; i < m.output_names.size() && i < m.output_source.size(); ++i)
    if (m.output_names[i] == name && m.output_source[i].alias_slot >= 0)
      return m.output_source[i].alias_scale * slot(m.output_source[i].alias_slot);
  return std::numeric_limits<double>::quiet_NaN();
}

}  // namespace mbs::python
