// Entry points that prove the runtime works inside an FMU's shared library, with no mbs, LLVM or
// C++ library installed next to it: a sparse solve through the runtime's KLU-backed linear solver,
// an exception thrown by the runtime and caught in the library, and the solver options table
// (the runtime's messages formatted by fmt, "did you mean" from runtime/io/Suggest).
// tests/unit/test_fmu_link.cpp calls them from a plain C program in an empty environment.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <exception>
#include <optional>
#include <string>
#include <vector>

#include "runtime/linalg/LinearSolver.h"
#include "runtime/solvers/Options.h"
#include "tools/fmu/blob/Export.h"

namespace {
// Copies text into buf (truncated to size - 1 characters, NUL-terminated); returns its full length.
int32_t copy_out(const std::string& text, char* buf, int32_t size) {
  if (size > 0) {
    const size_t n = std::min(text.size(), static_cast<size_t>(size - 1));
    std::memcpy(buf, text.data(), n);
    buf[n] = '\0';
  }
  return static_cast<int32_t>(text.size());
}
}  // namespace

// Solves tridiag(-1, 4, -1) x = b, b_k = k + 1, of size n with the runtime's LinearSolver set to
// KLU; writes x[0..n). Returns 0, the solver's singular column + 1, or -1 when the runtime threw.
MBS_FMU_EXPORT int32_t mbs_fmu_selftest_klu(int32_t n, double* x) {
  try {
    std::vector<int32_t> row, col;
    std::vector<double> values;
    for (int32_t j = 0; j < n; ++j) {  // compressed-column order: by column, then row
      for (int32_t i = j - 1; i <= j + 1; ++i) {
        if (i < 0 || i >= n) continue;
        row.push_back(i);
        col.push_back(j);
        values.push_back(i == j ? 4.0 : -1.0);
      }
    }
    mbs::rt::LinearSolver solver;
    solver.setup(n, row, col, mbs::rt::LinearSolverKind::Klu);
    if (int32_t status = solver.factor(values.data())) return status;
    for (int32_t k = 0; k < n; ++k) x[k] = k + 1.0;
    solver.solve(x);
    return 0;
  } catch (...) {
    return -1;
  }
}

// Gives the runtime a pattern entry outside the matrix, catches what it throws and copies the
// message into buf (truncated to size - 1 characters). Returns the message's full length, or -1
// when nothing was thrown.
MBS_FMU_EXPORT int32_t mbs_fmu_selftest_exception(char* buf, int32_t size) {
  try {
    mbs::rt::LinearSolver solver;
    const int32_t row[] = {5};
    const int32_t col[] = {0};
    solver.setup(2, row, col, mbs::rt::LinearSolverKind::Klu);
    return -1;
  } catch (const std::exception& e) {
    // a static object: its destructor runs at dlclose through __cxa_finalize (Crt.cpp)
    static std::string last;
    last = e.what();
    return copy_out(last, buf, size);
  }
}

// Sets the solver option `name` to `value` in default options through the runtime's option table.
// On success returns 0 and copies the option's value as the runtime prints it into buf; otherwise
// returns 1 and copies the runtime's error message (-1: the runtime threw).
MBS_FMU_EXPORT int32_t mbs_fmu_selftest_option(const char* name, const char* value, char* buf,
                                               int32_t size) {
  try {
    mbs::rt::SolverOptions options;
    if (std::optional<std::string> error = mbs::rt::set_option(options, name, value)) {
      copy_out(*error, buf, size);
      return 1;
    }
    copy_out(mbs::rt::get_option(options, *mbs::rt::find_option(name)), buf, size);
    return 0;
  } catch (...) {
    return -1;
  }
}
