#include "runtime/solvers/ModelCheck.h"

#include <fmt/format.h>

#include "runtime/solvers/Failure.h"

namespace mbs::rt {

namespace {

[[noreturn]] void fail(const CompiledModel& m, const std::string& what) {
  throw SolverSetupError(fmt::format("model '{}' is inconsistent: {}", m.name, what));
}

void check_size(const CompiledModel& m, size_t actual, int64_t expected, const char* field,
                const char* dimension) {
  if (static_cast<int64_t>(actual) != expected) {
    fail(m, fmt::format("{} has {} entries, expected {} = {}", field, actual, dimension, expected));
  }
}

void check_slot(const CompiledModel& m, int32_t slot, const char* field) {
  if (slot < 0 || slot >= m.n_v) {
    fail(m,
         fmt::format("{} = {} is not a slot of the symbol vector (n_v = {})", field, slot, m.n_v));
  }
}

void check_slots(const CompiledModel& m, const std::vector<int32_t>& slots, int32_t n,
                 const char* field, const char* dimension) {
  check_size(m, slots.size(), n, field, dimension);
  for (size_t i = 0; i < slots.size(); ++i) {
    check_slot(m, slots[i], fmt::format("{}[{}]", field, i).c_str());
  }
}

void check_pattern(const CompiledModel& m, const SparseKernel& k, const char* field) {
  if (k.rows != m.n_eq() || k.cols != m.n_eq()) {
    fail(m, fmt::format("{} is {} x {}, expected n_eq x n_eq = {} x {}", field, k.rows, k.cols,
                        m.n_eq(), m.n_eq()));
  }
  if (k.row.size() != k.col.size()) {
    fail(m, fmt::format("{}.row has {} entries but {}.col has {}", field, k.row.size(), field,
                        k.col.size()));
  }
  if (!k.values.fn) fail(m, fmt::format("{} has no kernel", field));
  if (k.values.n_out != k.nnz()) {
    fail(m, fmt::format("{}.values has {} outputs, expected nnz = {}", field, k.values.n_out,
                        k.nnz()));
  }
  for (int32_t e = 0; e < k.nnz(); ++e) {
    const int32_t r = k.row[e], c = k.col[e];
    if (r < 0 || r >= k.rows || c < 0 || c >= k.cols) {
      fail(m, fmt::format("{} entry {} = ({}, {}) is outside the matrix", field, e, r, c));
    }
    if (e > 0 && !(c > k.col[e - 1] || (c == k.col[e - 1] && r > k.row[e - 1]))) {
      fail(m, fmt::format("{} entry {} = ({}, {}) is not in compressed-column order (after "
                          "({}, {})) or a duplicate",
                          field, e, r, c, k.row[e - 1], k.col[e - 1]));
    }
  }
}

}  // namespace

void check_model(const CompiledModel& m) {
  if (m.n_v < 0 || m.n_q < 0 || m.n_y < 0 || m.n_z < 0) fail(m, "a size is negative");
  check_size(m, m.v0.size(), m.n_v, "v0", "n_v");
  check_slot(m, m.slot_time, "slot_time");
  check_slot(m, m.slot_c_q, "slot_c_q");
  check_slot(m, m.slot_c_qd, "slot_c_qd");
  check_slot(m, m.slot_c_y, "slot_c_y");
  check_slots(m, m.q_slot, m.n_q, "q_slot", "n_q");
  check_slots(m, m.qd_slot, m.n_q, "qd_slot", "n_q");
  check_slots(m, m.qdd_slot, m.n_q, "qdd_slot", "n_q");
  check_slots(m, m.y_slot, m.n_y, "y_slot", "n_y");
  check_slots(m, m.yd_slot, m.n_y, "yd_slot", "n_y");
  check_slots(m, m.z_slot, m.n_z, "z_slot", "n_z");
  if (!m.q.empty()) check_size(m, m.q.size(), m.n_q, "q (names)", "n_q");
  if (!m.y.empty()) check_size(m, m.y.size(), m.n_y, "y (names)", "n_y");
  if (!m.z.empty()) check_size(m, m.z.size(), m.n_z, "z (names)", "n_z");
  check_size(m, m.eq_level.size(), m.n_eq(), "eq_level", "n_eq");
  if (!m.z_level.empty()) check_size(m, m.z_level.size(), m.n_z, "z_level", "n_z");
  if (!m.eq_source.empty()) check_size(m, m.eq_source.size(), m.n_eq(), "eq_source", "n_eq");
  if (!m.residual.fn) fail(m, "residual has no kernel");
  if (m.residual.n_out != m.n_eq()) {
    fail(m, fmt::format("residual has {} outputs, expected n_eq = {}", m.residual.n_out, m.n_eq()));
  }
  check_pattern(m, m.newton_matrix, "newton_matrix");
  if (m.init_residual.fn) {
    if (m.init_residual.n_out != m.n_eq()) {
      fail(m, fmt::format("init_residual has {} outputs, expected n_eq = {}", m.init_residual.n_out,
                          m.n_eq()));
    }
    check_pattern(m, m.init_matrix, "init_matrix");
  }
  if (m.outputs.fn) {
    check_size(m, m.output_names.size(), m.outputs.n_out, "output_names", "outputs.n_out");
  }
}

}  // namespace mbs::rt
