// What the native module's files share: raising the package's exceptions (mbs/_errors.py),
// numpy arrays over the runtime's buffers, the model's names and values as Python data.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <Eigen/Dense>
#include <optional>
#include <string>
#include <vector>

#include "compiler/driver/Compile.h"
#include "runtime/model/CompiledModel.h"
#include "runtime/session/Instance.h"
#include "runtime/solvers/Statistics.h"

namespace mbs::python {

namespace py = pybind11;

// Raise mbs.UsageError(message) / mbs.ModelError or mbs.UsageError with the diagnostics of a
// failed compile / mbs.SolverError from a failure's dict (time, step, equation, variable,
// message, kind).
[[noreturn]] void raise_usage(const std::string& message);
[[noreturn]] void raise_compile_error(const CompileResult& result, const std::string& text);
[[noreturn]] void raise_solver_error(const py::dict& failure);

// Text to Python's sys.stderr (the compiler's warnings); nothing when empty.
void write_stderr(const std::string& text);

// A rows x width array that owns `data` (row-major; moved, not copied).
py::array rows_array(std::vector<double>&& data, size_t width);
// A copy of a dense matrix as a C-ordered array.
py::array matrix_array(const Eigen::MatrixXd& m);
// rt::Statistics as a dict by field name (the counters as int, the rest as float).
py::dict statistics_dict(const rt::Statistics& s);

// v[i] or an empty string past the end (the model's optional per-entry tables).
inline std::string at(const std::vector<std::string>& v, size_t i) {
  return i < v.size() ? v[i] : std::string();
}
// "file:line" of a declaration, or "" without one.
std::string declared_at(const rt::SourceRef& s);
// The start value of a variable (an unknown, der(q), or an alias of one) from the instance.
double start_value(const rt::CompiledModel& m, rt::Instance& inst, const std::string& name);

// The stepping API: mbs._mbs.Run (Stepping.cpp).
void register_stepping(py::module_& mod);

}  // namespace mbs::python
