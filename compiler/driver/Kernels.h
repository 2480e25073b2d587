// The "kernels" pass: from the SymbolicDAE to the lists of expressions the runtime calls
// (residuals, Newton matrix, mass matrix, index-reduced initial system, outputs, initial values),
// with the sparsity patterns of the matrix kernels.
#pragma once

#include <iosfwd>
#include <string>
#include <unordered_map>
#include <vector>

#include "compiler/codegen/Jit.h"
#include "compiler/dae/Dae.h"
#include "compiler/symbolic/Expr.h"

namespace mbs {

// Groups of variables for KernelSpec::groups: the elements of one declared array, or one
// variable of an array of components (the same declaration, the same name but for indices).
class VariableGroups {
 public:
  // 0 for a variable without a declaration
  uint32_t of(const Span& declared, const std::string& name);

 private:
  std::unordered_map<std::string, uint32_t> ids_;
  std::string key_;
};

struct MatrixKernel {
  codegen::KernelSpec spec;
  sym::Pattern pattern;  // compressed-column order, values in spec.outputs
};

struct ModelKernels {
  uint32_t c_q = 0, c_qd = 0, c_y = 0;       // Newton-matrix coefficient symbols
  codegen::KernelSpec residual;              // F
  MatrixKernel newton_matrix;                // dF/d[qdd|yd|z] + c_q dF/dq + c_qd dF/dqd + c_y dF/dy
  MatrixKernel mass_matrix;                  // dF/d[qdd|yd]
  codegen::KernelSpec init_residual;         // index-reduced F
  MatrixKernel init_matrix;                  // d init_residual / d[qdd|yd|z]
  MatrixKernel jac_q, jac_qd, jac_y, jac_z;  // dF/dq, dF/dqd, dF/dy, dF/dz
  codegen::KernelSpec index2_residual;       // F, position constraints replaced by d/dt
  MatrixKernel index2_matrix;                // its Newton matrix (newton_matrix's columns)
  codegen::KernelSpec outputs;               // every model variable
  bool inverse_dynamics = false;             // the next six kernels exist
  MatrixKernel outputs_z;                    // d outputs / dz (inverse dynamics: wrenches in z)
  codegen::KernelSpec constraint_g;          // the position-level rows g alone
  MatrixKernel constraint_G;                 // dg/dq
  codegen::KernelSpec constraint_gd;         // dg/dt
  codegen::KernelSpec constraint_gamma;      // d2g/dt2 at qdd = 0
  // the body-wise balance (SymbolicDae::body_balance; inverse dynamics of a mechanism): its rows
  // and the joints' wrenches at zero unknowns (reaction coordinates substituted by 0, the z slots
  // read as 0 by the caller) and their Jacobians with respect to [z | reaction coordinates]
  codegen::KernelSpec body_rows, body_wrench;
  MatrixKernel body_rows_u, body_wrench_u;
  std::vector<std::string> body_columns;  // the unknowns: z's names, then the reaction coordinates
  // what the inverse dynamics evaluates at each sample, in one kernel that shares the common
  // subexpressions: F, the values of jac_z, the outputs it reads (inverse_output_columns: closure
  // checks, joint wrenches, CutForceTorque sensors, every output that depends on z) and their
  // entries of outputs_z (inverse_outputs_z: rows index inverse_output_columns)
  codegen::KernelSpec inverse_balance;
  std::vector<int32_t> inverse_output_columns;
  sym::Pattern inverse_outputs_z;
  codegen::KernelSpec initial_values;  // start values [q | qd | y | z] from parameters
  // Events (SymbolicDae::whens; only when the model has when-equations): `events` computes the
  // zero-crossing functions (a - b of each relation a < b, a <= b, a > b, a >= b of the
  // conditions, once each), then every branch's condition (1.0 / 0.0) in when and branch order;
  // `event_reinit` the value of every reinit in the same order. The runtime maps them to slots
  // with CompiledModel::when_*.
  // The switches of the residuals (if-expressions whose condition changes in time, abs, sign,
  // min, max; not inside noEvent) add crossing functions after those of the whens: any sign
  // change of one stops the step there (n_switches of the n_crossings, the last ones).
  bool has_events = false;
  codegen::KernelSpec events, event_reinit;
  int32_t n_crossings = 0, n_switches = 0;
  // per crossing function of the whens (the first n_crossings - n_switches): the symbol its
  // relations read where it is exactly 0 (CompiledModel::crossing_side_slot)
  std::vector<uint32_t> crossing_sides;
  // every parameter's binding as written (other parameters as symbols), in the order of the
  // flat model's parameters; set by the driver (set_parameter_bindings)
  codegen::KernelSpec parameter_bindings;
  // Exact sensitivities (CompileOptions::sensitivities; set by the driver): dF/dp, the initial
  // system's d/d[q | qd | y | p], the start values' d/dp, the bindings' d/dp and the outputs'
  // d/d[q | qd | qdd | y | yd | z | p], p = the flat model's parameters in order.
  bool sensitivities = false;
  MatrixKernel sens_F_p, sens_init, sens_start, sens_bindings, sens_outputs;
  // every kernel (their addresses: nothing is copied); with inverse_dynamics the
  // per_sample_inverse ones first
  std::vector<const codegen::KernelSpec*> all() const;
  static constexpr size_t per_sample_inverse = 5;
};

// `inverse_dynamics` adds outputs_z and the constraint_* kernels (rt::InverseDynamics; the
// runtime serves the constraint rows from the other kernels when they are absent).
// The sparse Jacobian of `f` with respect to `symbols` (one column each).
MatrixKernel symbol_jacobian(sym::Context& cx, const char* name, const std::vector<sym::Expr>& f,
                             const std::vector<uint32_t>& symbols);

ModelKernels build_kernels(const SymbolicDae& dae, sym::Context& cx, bool inverse_dynamics = false);

void print_kernels(std::ostream& os, const sym::Context& cx, const ModelKernels& k);

}  // namespace mbs
