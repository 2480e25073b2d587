// Inverse dynamics of a (closed-chain) mechanism with prescribed motion (seed 003,
// docs/inverse-dynamics.md): at every sample time
//   1. motion reconstruction: all coordinates q from the position-level constraints g(q, t) = 0
//      (closure rows, unit quaternions and the prescribed-motion equations of the active joints)
//      by Newton from a prediction off the previous sample, on the rows selected as independent
//      at the start; q' from G q' = -g_t and q'' from G q'' = -gamma (the symbolic velocity form
//      and acceleration bias); every row of g, g' and g'' is checked, not only the selected ones;
//   2. the balance: the equations of motion (Newton-Euler balances projected on the joint
//      coordinates) are linear in the unknown efforts of the active joints and the closure
//      multipliers z: A z = b; with redundant constraints A has a nullspace;
//   3. uniqueness: after positive diagonal scaling, a full SVD of A with the rank threshold
//      atol + rtol * sigma_max (computed block by block: the independent groups of equations and
//      unknowns of the sparse balance, whose SVDs together are the SVD of A); an output c.z + d (an
//      effort, a multiplier or a joint-wrench component) is reported only when c annihilates the
//      nullspace (then every solution gives the same value, computed from the dual vector w with
//      A^T w = c), otherwise as not determined.
#pragma once

#include <Eigen/Dense>
#include <Eigen/SparseCore>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/invdyn/Trajectory.h"
#include "runtime/io/Progress.h"
#include "runtime/model/CompiledModel.h"
#include "runtime/model/Constraints.h"

namespace mbs::rt {

// The balance whose uniqueness is analysed (docs/inverse-dynamics.md, "The balance"):
//   Tree:   the equations of motion of the tree coordinates (the Newton-Euler balances of the
//           subtrees projected on the coordinates; unknowns: active efforts, closure
//           multipliers), the default;
//   Bodies: six Newton-Euler rows per moving rigid aggregate, every tree joint's wrench on
//           reaction coordinates of its own (five for a revolute or prismatic joint).
// The two have the same solution family; Bodies is the seed's literal form and a cross-check.
enum class BalanceForm : uint8_t { Tree, Bodies };

struct InverseDynamicsOptions {
  BalanceForm balance = BalanceForm::Tree;
  double t_end = 1.0;
  double h = 1e-3;
  double rank_atol = 1e-12;  // rank threshold: atol + rtol * sigma_max (seed 003)
  double rank_rtol = 1e-10;
  double unique_tol = 1e-8;  // |V_null^T c| <= unique_tol |c|: c annihilates the nullspace
  double newton_tol = 1e-12;
  int newton_max_iter = 25;
  double check_tol = 1e-8;   // closure, velocity and acceleration residuals at every sample
  double rcond_min = 1e-10;  // below: a singular configuration
  std::string trajectory;    // CSV file with the motion of the prescribed joints without equations
  // the sample times; empty: t0, t0 + h, ..., t_end (inverse_dynamics_to_csv)
  std::vector<double> times;
  // CSV file of loads logged by another tool (time, then output names: efforts, multipliers,
  // <joint>.reaction_f[k] / reaction_t[k], ...), compared with the balance at every sample
  std::string logged;
  // the symbol vector to start from (parameters and start values, rt::Instance); empty: v0
  std::vector<double> start;
};

// One requested output: an unknown of the balance (z index) or a model output column (a joint
// wrench component, linear in z).
struct InverseOutput {
  std::string name;
  int32_t z = -1;       // >= 0: the balance unknown z[z]
  int32_t column = -1;  // >= 0: model output column (wrench component)
};

struct InverseSample {
  double t = 0;
  std::vector<double> q, qd, qdd;
  std::vector<double> value;  // per output (NaN where not determined)
  std::vector<uint8_t> unique;
  int rank = 0, nullity = 0;
  bool rank_stable = true;
  double closure = 0, velocity = 0, acceleration = 0;  // largest residuals over all rows
  double balance = 0;  // scaled residual of A z = b at the minimum-norm solution
  double dual = 0;     // largest relative residual of A^T w = c over the unique outputs
  // with logged loads (InverseDynamicsOptions::logged), NaN otherwise:
  double logged_balance = NAN;        // scaled balance residual of the loads closest to the log
  double logged_admissibility = NAN;  // the part of the log no ideal joint can transmit
  double logged_distance = NAN;       // distance of the log to the admissible solutions A z = b
};

class InverseDynamics {
 public:
  // The model must have been compiled for inverse dynamics (redundant closure rows kept, joint
  // wrenches as outputs, condensed form): mbs::CompileOptions::inverse_dynamics.
  InverseDynamics(std::shared_ptr<const CompiledModel> model, const InverseDynamicsOptions& o);

  const std::vector<InverseOutput>& outputs() const { return outputs_; }
  const std::vector<int32_t>& selected_rows() const { return selected_; }
  // The closed-chain modules of the reconstruction, after the first sample: per module its name
  // and its coordinates (indices of CompiledModel::q).
  std::vector<std::pair<std::string, std::vector<int32_t>>> modules() const {
    std::vector<std::pair<std::string, std::vector<int32_t>>> out;
    for (const auto& m : modules_) out.emplace_back(m.name, m.coords);
    return out;
  }

  // Reconstructs and analyses the sample at t (the first call must be at the model's start
  // time). Returns false with message() set when the motion cannot be reconstructed.
  bool sample(double t, InverseSample& out);
  const std::string& message() const { return message_; }

 private:
  bool select_rows();
  bool solve_positions(double t);
  // (1) the motion at t: q by Newton on the selected closure rows, q' and q'', every row checked;
  // leaves the output values at z = 0 (outv_) for the closure checks and the offsets
  bool reconstruct_motion(double t, InverseSample& s);
  // at the reconstructed motion (z = 0): the outputs (outv_), with the model's inverse_balance
  // kernel also F (f_) and jac_z (jz_) and the outputs' z-derivatives (ib_)
  void eval_at_motion();
  // (2) the balance at the reconstructed motion: A_ (equations of motion x unknowns z), b_, and
  // per output column (row crow_[column]) out = out0_ + C_ z
  void build_balance();
  // (3) from A_, b_, C_, out0_ alone: zeroing, scaling, SVD, rank, the minimum-norm solution and
  // each output's uniqueness and value
  void analyse_balance(InverseSample& s);
  std::shared_ptr<const CompiledModel> keep_;
  const CompiledModel& m_;
  InverseDynamicsOptions o_;
  ConstraintKinematics ck_;
  std::vector<double> v_;
  std::vector<int32_t> selected_;  // rows of ck_ used to solve (n_q of them)
  std::vector<int32_t> dyn_rows_;  // equations of motion
  std::vector<InverseOutput> outputs_;
  std::vector<double> prev_q_, prev_qd_, prev_qdd_;
  double prev_t_ = 0;
  bool started_ = false;
  std::string message_;
  // prescribed coordinates that follow the trajectory file: constraint row (index into ck_),
  // the parameter slot the row reads, the trajectory column; and their derivatives at the sample
  struct Driven {
    int32_t row, slot, column;
    double qd = 0, qdd = 0;
  };
  std::unique_ptr<Trajectory> trajectory_;
  // logged loads: times, per logged column its output index and its values
  std::vector<double> log_t_;
  std::vector<int32_t> log_output_;
  std::vector<std::vector<double>> log_values_;
  struct AxisCheck {
    int log[3] = {-1, -1, -1};  // logged columns of the torque (force) vector
    double n[3] = {0, 0, 0};    // the joint's axis
    int effort_log = -1;        // logged column of its effort, or -1
    bool active = false;        // its effort is an unknown (prescribed joint)
  };
  std::vector<AxisCheck> axis_checks_;
  void load_logged(const std::string& path);
  void compare_logged(double t, InverseSample& s);
  std::vector<Driven> driven_;
  void patch_velocity(std::vector<double>& gd) const;
  void patch_bias(std::vector<double>& gam) const;
  std::vector<double> g_, G_, f_, jz_, outv_, oz_, gd_, gam_;
  std::vector<int32_t> row_of_, rows_, cols_, col_of_z_, crow_;
  // outputs <joint>.closure_check[k], closure_check_v[k], closure_check_a[k]: the redundant
  // rows' residuals and their first and second time derivatives (level 0, 1, 2)
  std::vector<int32_t> check_columns_;
  std::vector<int8_t> check_level_;
  Eigen::Index n_crows_ = 0;
  bool any_column_ = false;
  Eigen::MatrixXd A_, As_;
  // rows: the output columns (crow_), a fixed pattern (cpos_: outputs_z entry -> its value in C_);
  // explicit zeros are allowed
  Eigen::SparseMatrix<double, Eigen::RowMajor> C_;
  std::vector<int32_t> cpos_;
  // the body-wise balance (BalanceForm::Bodies): per row of C_ the body_wrench output serving it
  // (-1: outputs_z), the position in C_ of each body_wrench_u entry, the kernels' values
  bool body_ = false;
  std::vector<int32_t> served_, bpos_;
  std::vector<double> brow_, bru_, bw_, bwu_;
  // the model's inverse_balance kernel: its values, where its outputs and their z-derivatives
  // start, the position in C_ of each derivative (-1: not read)
  bool combined_ = false;
  std::vector<double> ib_;
  size_t ib_outputs_ = 0, ib_outputs_z_ = 0;
  std::vector<int32_t> ibpos_;
  Eigen::VectorXd b_, bs_, rs_, cs_, x_, out0_;
  Eigen::VectorXd rhs_, qd_, qdd_, gs_, dq_;  // motion reconstruction
  // an output's c over the active unknowns (column, value); V_null by row
  std::vector<int32_t> cj_;
  std::vector<double> cv_;
  Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> Vn_;
  Eigen::VectorXd pv_;
  // the SVD of As_ by independent blocks: union-find over rows and columns, per block its rows,
  // columns, matrix and SVD
  std::vector<int32_t> parent_, block_of_;
  std::vector<std::vector<int32_t>> block_rows_, block_cols_;
  static constexpr Eigen::Index kJacobiMaxCols = 32;
  struct Block {
    Eigen::MatrixXd A;
    Eigen::JacobiSVD<Eigen::MatrixXd> svd;  // blocks of up to kJacobiMaxCols columns
    Eigen::BDCSVD<Eigen::MatrixXd> bdc;     // larger ones
    Eigen::VectorXd sig1;                   // a 1 x 1 block's SVD, without JacobiSVD
    Eigen::MatrixXd U1, V1;
    const Eigen::VectorXd* sig = nullptr;  // the block's SVD: svd's or the 1 x 1 one
    const Eigen::MatrixXd *U = nullptr, *V = nullptr;
  };
  std::vector<Block> block_;
  // the closed-chain modules of the selected rows (Modules.h): rows (positions in selected_),
  // coordinates, name, and per Newton solve their G, LU, residual and step
  struct Module {
    std::vector<int32_t> rows, coords;
    std::string name;
    Eigen::MatrixXd G;
    Eigen::PartialPivLU<Eigen::MatrixXd> lu;
    Eigen::VectorXd g, x;
  };
  std::vector<Module> modules_;
  void make_modules();
  void solve_modules(const Eigen::VectorXd& r, Eigen::VectorXd& x);
};

struct InverseDynamicsRun {
  bool ok = false;
  bool interrupted = false;  // Ctrl-C (interrupt_requested()): the samples so far are written
  std::string message;       // the failure, with time
  int64_t samples = 0;
  std::vector<std::string> names;
  std::vector<int64_t> unique_samples;  // per output: samples where it was determined
  double max_closure = 0, max_velocity = 0, max_acceleration = 0, max_balance = 0, max_dual = 0;
  bool logged = false;
  double max_logged_balance = 0, max_logged_admissibility = 0, max_logged_distance = 0;
  int min_rank = 1 << 30, max_rank = 0;
  bool rank_stable = true;
};

// Runs from the model's start time to t_end in steps of h (or at options.times) and writes a CSV
// row per sample: time,
// every coordinate, then every output (empty where it is not determined). Rows are flushed as the
// run goes; a path ending in .mat gets the .mat result format instead (ResultWriter.h; an
// undetermined value is NaN there). Throws std::runtime_error if the file cannot be written.
InverseDynamicsRun inverse_dynamics_to_csv(std::shared_ptr<const CompiledModel> model,
                                           const InverseDynamicsOptions& options,
                                           const std::string& csv_path,
                                           ProgressSink* progress = nullptr);

// The summary printed after a run: which outputs were determined in every sample, in some, in
// none; the largest closure, velocity, acceleration, balance and dual residuals; the rank.
std::string format_inverse_summary(const InverseDynamicsRun& run);

}  // namespace mbs::rt
