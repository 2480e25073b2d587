#include "runtime/analysis/Linearize.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "runtime/io/AtomicFile.h"
#include "runtime/io/MatrixMarket.h"
#include "runtime/solvers/Failure.h"

namespace mbs::rt {

namespace {

// The kernel's matrix at v as a dense matrix; columns [col_begin, col_begin + n_cols) only.
Eigen::MatrixXd dense(const CompiledModel& m, const SparseKernel& k, const char* what,
                      std::span<const double> v, int32_t rows, int32_t col_begin, int32_t n_cols) {
  Eigen::MatrixXd a = Eigen::MatrixXd::Zero(rows, n_cols);
  if (k.nnz() == 0) return a;
  std::vector<double> values(static_cast<size_t>(k.nnz()), 0.0);
  int32_t status = 0;
  if (!k.values.fn) throw std::runtime_error(fmt::format("the model has no {} kernel", what));
  status = k.values(v.data(), values.data());
  if (status != 0) {
    throw std::runtime_error(
        fmt::format("the {} kernel returned status {}{}", what, status,
                    status > 0 ? fmt::format(" (entry {} is not finite)", status - 1) : ""));
  }
  for (int32_t e = 0; e < k.nnz(); ++e) {
    const int32_t c = k.col[e] - col_begin;
    if (c < 0 || c >= n_cols) continue;
    a(k.row[e], c) = values[e];
  }
  return a;
}

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) {
    for (char c : n) out += c == '\n' || c == '\r' ? ' ' : c;  // one name per line
    out += '\n';
  }
  return out;
}

}  // namespace

LinearSystem linearize(const CompiledModel& m, std::span<const double> v) {
  if (static_cast<int32_t>(v.size()) != m.n_v) {
    throw std::runtime_error(
        fmt::format("linearize: symbol vector of size {}, the model has {}", v.size(), m.n_v));
  }
  LinearSystem s;
  s.n_q = m.n_q, s.n_y = m.n_y, s.n_z = m.n_z;
  const int32_t n = m.n_eq();
  s.M = dense(m, m.mass_matrix, "mass_matrix", v, n, 0, m.n_q);
  s.E = dense(m, m.mass_matrix, "mass_matrix", v, n, m.n_q, m.n_y);
  s.K = dense(m, m.jac_q, "jac_q", v, n, 0, m.n_q);
  s.D = dense(m, m.jac_qd, "jac_qd", v, n, 0, m.n_q);
  s.A = dense(m, m.jac_y, "jac_y", v, n, 0, m.n_y);
  s.B = dense(m, m.jac_z, "jac_z", v, n, 0, m.n_z);
  s.eq_level = m.eq_level;
  s.eq_level.resize(static_cast<size_t>(n), EquationLevel::Dynamic);
  s.z_level = m.z_level;
  for (int32_t i = 0; i < n; ++i) {
    const EquationLevel l = s.eq_level[i];
    if (l == EquationLevel::Position || l == EquationLevel::Velocity)
      s.constraint_rows.push_back(i);
  }
  s.G = Eigen::MatrixXd::Zero(static_cast<Eigen::Index>(s.constraint_rows.size()), m.n_q);
  for (size_t r = 0; r < s.constraint_rows.size(); ++r) {
    const int32_t i = s.constraint_rows[r];
    s.G.row(static_cast<Eigen::Index>(r)) =
        s.eq_level[i] == EquationLevel::Position ? s.K.row(i) : s.D.row(i);
  }
  for (int32_t i = 0; i < n; ++i) s.row_names.push_back(equation_text(m, i));
  for (int32_t i = 0; i < m.n_q; ++i) s.q_names.push_back(unknown_name(m, i));
  for (int32_t i = 0; i < m.n_y; ++i) s.y_names.push_back(unknown_name(m, m.n_q + i));
  for (int32_t i = 0; i < m.n_z; ++i) s.z_names.push_back(unknown_name(m, m.n_q + m.n_y + i));
  s.v.assign(v.begin(), v.end());
  return s;
}

void write_linear_system(const LinearSystem& s, const std::string& prefix,
                         std::vector<std::string>* written_paths) {
  auto write = [&](const char* suffix, const Eigen::MatrixXd& a, const std::string& what) {
    const std::string path = prefix + "_" + suffix + ".mtx";
    write_matrix_market(path, a, what + "\nrow and column names: " + prefix + "_names.txt");
    if (written_paths) written_paths->push_back(path);
  };
  write("M", s.M, "M = dF/dqdd: rows equations, columns q");
  write("K", s.K, "K = dF/dq: rows equations, columns q");
  write("D", s.D, "D = dF/dqd: rows equations, columns q");
  write("G", s.G, "G: constraint Jacobian, rows constraint equations, columns q");
  write("B", s.B, "B = dF/dz: rows equations, columns z");
  if (s.n_y > 0) {
    write("E", s.E, "E = dF/dyd: rows equations, columns y");
    write("A", s.A, "A = dF/dy: rows equations, columns y");
  }
  std::vector<std::string> constraint_names;
  for (int32_t i : s.constraint_rows) constraint_names.push_back(s.row_names[i]);
  const std::string path = prefix + "_names.txt";
  std::ostringstream f;
  f << fmt::format("# equations ({}): rows of M, K, D, B, E, A\n", s.row_names.size())
    << join(s.row_names) << fmt::format("# constraints ({}): rows of G\n", s.constraint_rows.size())
    << join(constraint_names) << fmt::format("# q ({}): columns of M, K, D, G\n", s.q_names.size())
    << join(s.q_names) << fmt::format("# y ({}): columns of E, A\n", s.y_names.size())
    << join(s.y_names) << fmt::format("# z ({}): columns of B\n", s.z_names.size())
    << join(s.z_names);
  write_file_atomically(path, f.str());
  if (written_paths) written_paths->push_back(path);
}

}  // namespace mbs::rt
