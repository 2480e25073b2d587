// The multibody lowering (see Mechanics.h for the steps). Vectors are resolved in the frame named
// by their suffix: `_w` world, otherwise the frame of the node they belong to.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <ostream>
#include <set>
#include <unordered_map>

#include "compiler/mech/Assembly.h"
#include "compiler/mech/JointKinds.h"
#include "compiler/mech/Mechanics.h"
#include "compiler/mech/Shapes.h"
#include "compiler/mech/Vec.h"

namespace mbs {
namespace {

using sym::Expr;
using namespace mech;

enum class Role { World, Body, Edge, Load, Sensor };

struct KindInfo {
  const char* kind;
  Role role;
  std::vector<const char*> frames;
};

// The elements that are not joints; every joint kind (JointKinds.h) is an edge between frame_a
// and frame_b.
const std::vector<KindInfo>& kinds() {
  static const std::vector<KindInfo> k = {
      {"World", Role::World, {"frame"}},
      {"Body", Role::Body, {"frame_a"}},
      {"LineForce", Role::Load, {"frame_a", "frame_b"}},
      {"WorldForce", Role::Load, {"frame_b"}},
      {"FrameForce", Role::Load, {"frame_b"}},
      {"FrameSensor", Role::Sensor, {"frame"}},
      {"FrameKinematics", Role::Sensor, {"frame_a"}},
      {"DistanceSensor", Role::Sensor, {"frame_a", "frame_b"}},
      {"FixedShape", Role::Sensor, {"frame_a"}},  // drawn only (Shapes.h)
  };
  return k;
}

const KindInfo* kind_info(const std::string& kind) {
  static const KindInfo joint{"joint", Role::Edge, {"frame_a", "frame_b"}};
  if (joint_kind(kind) != nullptr) return &joint;
  for (const auto& k : kinds())
    if (kind == k.kind) return &k;
  return nullptr;
}

bool is_rigid(const std::string& kind) {
  const JointKind* k = joint_kind(kind);
  return k != nullptr && k->rigid();
}

// One joint coordinate (a tree coordinate becomes an ODE2 unknown of the DAE).
struct Coord {
  size_t elem = 0;
  std::string name;            // member name, e.g. "phi", "Q[2]"
  uint32_t q = 0, dq = 0;      // symbols of the coordinate and of der(coordinate)
  int var = -1, vel_var = -1;  // flat vars of the coordinate and of its velocity variable
  Expr effort = nullptr;       // generalized force along it (applied + spring + damper), or null
  bool quaternion = false;
  // A part of a rotation vector (Motion::RotationVector): dq is the symbol of its velocity
  // variable (the angular velocity w[i]), not der(q); `velocity` names that member.
  bool rotation_vector = false;
  std::string velocity;
};

// A rotation integrated as a Lie group (a joint with Motion::RotationVector coordinates): the
// chart R = R(Q_ref) exp([theta]x) and the angular velocity w of the child frame in that frame.
struct LieRotation {
  size_t elem = 0;
  std::array<uint32_t, 3> theta{}, w{};
  std::array<uint32_t, 4> q_ref{};
  V3 theta_expr{}, w_expr{};  // the symbols of theta and w
  std::array<Expr, 4> Q{};    // the quaternion of R
};

// One step of a path: the transform of a child frame C in its parent P, x_P = R x_C + r, and the
// relative angular velocity w and velocity v of C's origin, resolved in P.
struct Step {
  M3 R;
  V3 r, w, v;
  std::vector<int> coords;  // indices into Lowering::coords
  // der(w) when it is not the total derivative of w (a rotation vector's step: R^T der(R) w = 0,
  // so der(w) = R der(w_child); the total derivative would bring der(theta) into the equations
  // of motion); null entries: the total derivative.
  V3 w_dot{};
  // A rotation vector's step: the angular velocity w and its der(w) resolved in the child frame
  // (R^T w and R^T w_dot, written without R^T R): the child's angular velocity and acceleration
  // are R^T (parent's) + these, and the equation of motion along w[i] is the child's moment
  // about its axis i, so the mass matrix is the inertia, independent of the rotation. Null
  // entries: not such a step (an inverted one is taken the general way).
  V3 w_child{}, w_dot_child{};
};

struct Node {
  std::string name;  // a frame path of the node, or "<joint>#k" for an intermediate frame
  int parent = -1;
  Step step;      // from the parent (meaningless at the root)
  int edge = -1;  // element index of the edge it was reached by
  bool edge_forward = true;
  std::vector<int> children;
  int depth = 0;
  // kinematics
  M3 R_w;          // orientation: columns are the node's axes in the world
  V3 p_w;          // origin, world
  V3 w, v, al, a;  // angular velocity, velocity, angular acceleration, acceleration (- gravity)
  // required wrench (inertia minus applied loads) of the node's subtree, about its origin
  std::vector<Expr> f[3], m[3];
  V3 F, M;  // totals after the backward pass
  // inverse dynamics, body-wise balance: the tree joints' wrenches on the node (same convention)
  std::vector<Expr> bf[3], bm[3];
};

struct Elem {
  const MechElement* el = nullptr;
  const KindInfo* info = nullptr;
  const JointKind* joint = nullptr;  // a joint or rigid connection: its kind (JointKinds.h)
  std::vector<int> nodes;            // per frame of info->frames
  bool cut = false;
  bool in_tree = false;
  int child_node = -1;  // tree edge: the node it leads to (the last step's child)
  std::vector<int> coords;
  mech::V3 effort_F{}, effort_T{};  // cut joint: its efforts and springs as a wrench on frame_b
};

class Lowering {
 public:
  Lowering(FlatModel& flat, sym::Context& cx, DerivativeTable& ders, const MechOptions& opt,
           DiagnosticEngine& diags, std::ostream* emit)
      : flat_(flat), cx_(cx), ders_(ders), opt_(opt), diags_(diags), emit_(emit), al_(cx) {}

  bool run();

 private:
  // ---- flat model access
  int var(const std::string& name) const {
    auto it = var_index_.find(name);
    return it == var_index_.end() ? -1 : static_cast<int>(it->second);
  }
  const FlatVar& fv(const Elem& e, const std::string& member) {
    int i = var(e.el->path + "." + member);
    if (i < 0) fail(e, "has no member '" + member + "'");
    return flat_.vars[i];
  }
  // A parameter as an expression: zero-valued parameters are structural zeros.
  Expr param(const Elem& e, const std::string& member) {
    const FlatVar& v = fv(e, member);
    if (v.role == VarRole::Variable) return cx_.symbol(v.symbol);
    if (v.value == 0.0) {
      flat_.mark_compile_time(v.symbol,
                              "a zero the multibody lowering leaves out (" + v.name + ")");
      return cx_.zero();
    }
    return cx_.symbol(v.symbol);
  }
  // A parameter's value as a number: a new value needs a new compile.
  double value(const Elem& e, const std::string& member) {
    const FlatVar& v = fv(e, member);
    if (v.role != VarRole::Variable)
      flat_.mark_compile_time(v.symbol,
                              "a structural choice of the multibody lowering (" + v.name + ")");
    return v.value;
  }
  V3 pvec(const Elem& e, const std::string& member) {
    return {param(e, member + "[1]"), param(e, member + "[2]"), param(e, member + "[3]")};
  }
  M3 pmat(const Elem& e, const std::string& member) {
    M3 m;
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j)
        m[3 * i + j] = param(e, fmt::format("{}[{},{}]", member, i + 1, j + 1));
    return m;
  }
  // A unit axis from a parameter vector, evaluated at compile time (structural).
  V3 axis(const Elem& e, const std::string& member, std::array<double, 3>* out = nullptr) {
    std::array<double, 3> n = {value(e, member + "[1]"), value(e, member + "[2]"),
                               value(e, member + "[3]")};
    double len = std::sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
    if (!(len > 0)) fail(e, "axis '" + member + "' is the zero vector");
    for (double& x : n) x /= len;
    if (out) *out = n;
    return {cx_.num(n[0]), cx_.num(n[1]), cx_.num(n[2])};
  }
  // A direction of a joint in frame_a (JointKinds.h, Axis); `out` receives its numbers.
  V3 axis_of(const Elem& e, Axis a, std::array<double, 3>* out = nullptr) {
    std::array<double, 3> unit{};
    V3 v;
    switch (a) {
      case Axis::N:
        return axis(e, "n", out);
      case Axis::NA:
        return axis(e, "n_a", out);
      case Axis::NB:
        return axis(e, "n_b", out);
      case Axis::NX:
        return axis(e, "n_x", out);
      case Axis::NxNX: {
        std::array<double, 3> n, x;
        v = al_.cross(axis(e, "n", &n), axis(e, "n_x", &x));
        unit = {n[1] * x[2] - n[2] * x[1], n[2] * x[0] - n[0] * x[2], n[0] * x[1] - n[1] * x[0]};
        break;
      }
      case Axis::X:
      case Axis::Y:
      case Axis::Z: {
        const int i = a == Axis::X ? 0 : a == Axis::Y ? 1 : 2;
        unit[static_cast<size_t>(i)] = 1.0;
        v = {cx_.zero(), cx_.zero(), cx_.zero()};
        v[static_cast<size_t>(i)] = cx_.one();
        break;
      }
      case Axis::None:
        fail(e, "has a coordinate without an axis");
    }
    if (out) *out = unit;
    return v;
  }
  Expr sym_of(const Elem& e, const std::string& member) { return cx_.symbol(fv(e, member).symbol); }
  V3 svec(const Elem& e, const std::string& member) {
    return {sym_of(e, member + "[1]"), sym_of(e, member + "[2]"), sym_of(e, member + "[3]")};
  }

  [[noreturn]] void fail(const Elem& e, const std::string& what) {
    diags_.report(DiagKind::mech_invalid, e.el->span, {"'" + e.el->path + "' " + what});
    throw Failed{};
  }
  struct Failed {};

  FlatEquation& add_equation(Expr lhs_minus_rhs, Span span, std::string text,
                             rt::EquationRole role = rt::EquationRole::Model) {
    FlatEquation eq;
    eq.residual = lhs_minus_rhs;
    eq.span = span;
    eq.text = std::move(text);
    eq.origin = "mechanics";
    eq.role = role;
    new_equations_.push_back(std::move(eq));
    return new_equations_.back();
  }
  void define(const Elem& e, const std::string& member, Expr value) {
    const FlatVar& v = fv(e, member);
    if (e.cut) cut_def_[v.symbol] = value;  // a cut joint's coordinate as a function of the tree's
    add_equation(cx_.sub(cx_.symbol(v.symbol), value), e.el->span,
                 v.name + " = (" + e.el->kind + " " + member + ")");
  }
  void define3(const Elem& e, const std::string& member, const V3& value) {
    for (int i = 0; i < 3; ++i) define(e, fmt::format("{}[{}]", member, i + 1), value[i]);
  }
  // A new unknown of the model (Lagrange multipliers, kept recursive quantities); `unit` is ""
  // where the lowering does not know it (a multiplier's depends on how its row is written).
  uint32_t new_var(const std::string& name, const std::string& description, const std::string& unit,
                   Span span) {
    FlatVar v;
    v.name = name;
    v.symbol = cx_.new_symbol(name);
    v.description = description;
    v.unit = unit;
    v.span = span;
    flat_.var_of_symbol[v.symbol] = flat_.vars.size();
    var_index_[name] = flat_.vars.size();
    flat_.vars.push_back(std::move(v));
    return flat_.vars.back().symbol;
  }

  // ---- steps
  int coordinate(size_t elem, const std::string& member, const std::string& vel, Motion motion) {
    Elem& e = elems_[elem];
    Coord c;
    c.elem = elem;
    c.name = member;
    c.velocity = vel;
    c.var = var(e.el->path + "." + member);
    c.vel_var = var(e.el->path + "." + vel);
    if (c.var < 0 || c.vel_var < 0) fail(e, "lacks coordinate '" + member + "'");
    c.q = flat_.vars[c.var].symbol;
    c.quaternion = motion == Motion::Quaternion;
    c.rotation_vector = motion == Motion::RotationVector;
    if (c.rotation_vector) {
      c.dq = flat_.vars[c.vel_var].symbol;
    } else {
      flat_.vars[c.var].second_order = true;
      c.dq = ders_.der(c.q);
    }
    coords_.push_back(c);
    e.coords.push_back(static_cast<int>(coords_.size() - 1));
    return static_cast<int>(coords_.size() - 1);
  }
  Step rot(const V3& n, int c) {
    Step s;
    s.R = al_.rodrigues(n, cx_.symbol(coords_[c].q));
    s.r = al_.zero3();
    s.w = al_.scale(cx_.symbol(coords_[c].dq), n);
    s.v = al_.zero3();
    s.coords = {c};
    return s;
  }
  Step trans(const V3& n, int c) {
    Step s;
    s.R = al_.identity();
    s.r = al_.scale(cx_.symbol(coords_[c].q), n);
    s.w = al_.zero3();
    s.v = al_.scale(cx_.symbol(coords_[c].dq), n);
    s.coords = {c};
    return s;
  }
  Step quat(const std::array<int, 4>& c) {
    std::array<Expr, 4> q, dq;
    for (int i = 0; i < 4; ++i) {
      q[i] = cx_.symbol(coords_[c[i]].q);
      dq[i] = cx_.symbol(coords_[c[i]].dq);
    }
    Step s;
    s.R = al_.quaternion(q);
    s.r = al_.zero3();
    s.w = al_.quaternion_rate(q, dq);
    s.v = al_.zero3();
    s.coords = {c[0], c[1], c[2], c[3]};
    return s;
  }
  // The step of a rotation vector (Motion::RotationVector): its chart's variables, made here.
  Step rotation_vector(size_t elem, const std::array<const JointCoordinate*, 3>& c);
  Step fixed(const M3& R, const V3& r) {
    Step s;
    s.R = R;
    s.r = r;
    s.w = al_.zero3();
    s.v = al_.zero3();
    return s;
  }
  Step inverse(const Step& s) {
    Step t;
    t.R = al_.transpose(s.R);
    t.r = al_.neg(al_.mul(t.R, s.r));
    t.w = al_.neg(al_.mul(t.R, s.w));
    t.v = al_.mul(t.R, al_.sub(al_.cross(s.w, s.r), s.v));
    t.coords = s.coords;
    if (s.w_dot[0] != nullptr) {
      // a pure rotation (r = v = 0) whose R^T der(R) s.w vanishes: so does that of the inverse
      t.w_dot = al_.neg(al_.mul(t.R, s.w_dot));
    }
    return t;
  }
  std::vector<Step> steps_of(size_t elem);

  // ---- passes
  void build_graph();
  void build_tree();
  void kinematics();
  void loads();
  void cut_joints();
  void quaternion_rows();
  void rotation_vector_equations();
  void multipliers();
  void equations_of_motion();
  void cut_force_torque();
  std::pair<V3, V3> transmitted(const Elem& e);
  void body_balance();
  std::pair<M3, V3> relative_by_steps(int a, int b);
  void sensors();
  void shapes();
  void defaults();
  bool assemble();
  void print(std::ostream& os) const;

  // loads on nodes (in node coordinates, about the node origin); `joint`: a tree joint's wrench
  // in the body-wise balance (Node::bf, bm)
  void apply(int node, const V3& f, const V3& m, bool joint = false) {
    Node& nd = nodes_[node];
    for (int i = 0; i < 3; ++i) {
      (joint ? nd.bf : nd.f)[i].push_back(cx_.neg(f[i]));
      (joint ? nd.bm : nd.m)[i].push_back(cx_.neg(m[i]));
    }
  }
  // A wrench (F, T) resolved in the frame of node a, acting on node b at b's origin, and the
  // opposite wrench on node a at the same point.
  void apply_pair(int a, int b, const V3& F, const V3& T) {
    M3 R_ab = al_.mul(al_.transpose(nodes_[a].R_w), nodes_[b].R_w);
    M3 R_ba = al_.transpose(R_ab);
    apply(b, al_.mul(R_ba, F), al_.mul(R_ba, T));
    V3 r_ab = rel_position(a, b);
    apply(a, al_.neg(F), al_.neg(al_.add(T, al_.cross(r_ab, F))));
  }
  V3 rel_position(int a, int b) {
    return al_.mul(al_.transpose(nodes_[a].R_w), al_.sub(nodes_[b].p_w, nodes_[a].p_w));
  }
  M3 rel_rotation(int a, int b) { return al_.mul(al_.transpose(nodes_[a].R_w), nodes_[b].R_w); }
  V3 world_velocity(int n) { return al_.mul(nodes_[n].R_w, nodes_[n].v); }
  V3 world_angular_velocity(int n) { return al_.mul(nodes_[n].R_w, nodes_[n].w); }
  // x as new unknowns (the recursive form), each an auxiliary of `level`: Velocity (functions of
  // q and der(q)) or Dynamic (accelerations and forces, linear in der(q, 2)); FlatVar::auxiliary.
  V3 keep(const V3& x, int node, const char* what, const char* unit, rt::EquationLevel level);
  bool mentioned(uint32_t symbol) const { return mentioned_.count(symbol) != 0; }

  FlatModel& flat_;
  sym::Context& cx_;
  DerivativeTable& ders_;
  const MechOptions& opt_;
  DiagnosticEngine& diags_;
  std::ostream* emit_;
  Algebra al_;

  std::unordered_map<std::string, size_t> var_index_;
  std::set<uint32_t> mentioned_;  // symbols used by the model's own equations
  std::vector<Elem> elems_;
  std::vector<Coord> coords_;
  std::vector<Node> nodes_;
  size_t n_frame_nodes_ = 0;  // nodes_[0, n): frames of elements; after: inside multi-step joints
  std::map<std::string, int> node_of_frame_;
  int world_ = -1;          // element index
  int root_ = -1;           // node index
  std::vector<int> order_;  // nodes, parents before children
  bool recursive_ = false;
  V3 g_;
  std::vector<FlatEquation> new_equations_;
  std::unordered_map<uint32_t, Expr> cut_def_;  // cut joint coordinate -> its expression
  std::vector<std::pair<size_t, size_t>> trajectory_params_;  // (parameter var, coordinate var)
  std::vector<ClosureRow> closure_;           // constraint rows (cut joints, quaternion norms)
  std::vector<bool> keep_;                    // per closure row: independent at the assembled start
  std::vector<std::vector<Expr>> row_terms_;  // per coordinate: EOM terms
  std::vector<LieRotation> lie_;              // rotations integrated as a Lie group
};

// ------------------------------------------------------------------------------------------------

std::vector<Step> Lowering::steps_of(size_t i) {
  Elem& e = elems_[i];
  const JointKind* jk = e.joint;
  if (jk == nullptr) fail(e, "is not a joint");
  switch (jk->fixed) {
    case FixedTransform::Translation:
      return {fixed(al_.identity(), pvec(e, "r"))};
    case FixedTransform::Rotation:
      return {fixed(al_.rodrigues(axis(e, "n"), param(e, "angle")), pvec(e, "r"))};
    case FixedTransform::Identity:
      return {fixed(al_.identity(), al_.zero3())};
    case FixedTransform::None:
      break;
  }
  if (jk->perpendicular_a != nullptr) {
    std::array<double, 3> a, b;
    axis(e, jk->perpendicular_a, &a);
    axis(e, jk->perpendicular_b, &b);
    if (std::fabs(a[0] * b[0] + a[1] * b[1] + a[2] * b[2]) > 1e-9)
      fail(e, jk->perpendicular_message);
  }
  std::vector<Step> steps;
  std::array<int, 4> quaternion{};
  std::array<const JointCoordinate*, 3> rotation{};
  int parts = 0, rotation_parts = 0;
  for (const JointCoordinate& c : jk->coordinates) {
    const bool q = c.motion == Motion::Quaternion;
    if (c.motion == Motion::RotationVector) {
      rotation[static_cast<size_t>(rotation_parts++)] = &c;
      if (rotation_parts == 3) steps.push_back(rotation_vector(i, rotation));
      continue;
    }
    const int k = coordinate(i, c.coord, c.velocity, c.motion);
    if (q) {
      quaternion[static_cast<size_t>(parts++)] = k;
      if (parts == 4) steps.push_back(quat(quaternion));
    } else {
      const V3 n = axis_of(e, c.axis);
      steps.push_back(c.motion == Motion::Rotation ? rot(n, k) : trans(n, k));
    }
  }
  if (steps.empty()) fail(e, "is not a joint");
  return steps;
}

Step Lowering::rotation_vector(size_t i, const std::array<const JointCoordinate*, 3>& c) {
  Elem& e = elems_[i];
  const std::string& path = e.el->path;
  if (opt_.inverse_dynamics)
    fail(e, "has lie_group = true, which inverse dynamics does not take yet (use the quaternion)");
  LieRotation lie;
  lie.elem = i;
  // the start: the chart at Q_start (compile-time: the reference is a discrete value), theta = 0,
  // w = R(Q_start)^T w_start (w_start is resolved in frame_a, w in frame_b)
  std::array<double, 4> qn{};
  for (int k = 0; k < 4; ++k) qn[k] = value(e, fmt::format("Qn[{}]", k + 1));
  std::array<Expr, 4> qn_expr;
  for (int k = 0; k < 4; ++k) qn_expr[k] = cx_.num(qn[k]);
  const M3 R0 = al_.quaternion(qn_expr);
  const V3 w0 = al_.mul(al_.transpose(R0), pvec(e, "w_start"));
  for (int k = 0; k < 4; ++k) {
    const std::string name = fmt::format("{}.Q_ref[{}]", path, k + 1);
    lie.q_ref[k] = new_var(name, "reference rotation of the chart of theta", "1", e.el->span);
    FlatVar& v = flat_.vars.back();
    v.role = VarRole::Discrete;
    v.hidden = true;
    v.value = qn[k];
    ders_.set_constant(v.symbol);
  }
  std::vector<int> ks;
  for (int k = 0; k < 3; ++k) {
    const std::string theta = fmt::format("{}.{}", path, c[k]->coord);
    const std::string w = fmt::format("{}.{}", path, c[k]->velocity);
    lie.theta[k] = new_var(theta, "rotation vector of frame_b from the chart's reference Q_ref",
                           "rad", e.el->span);
    flat_.vars.back().start = cx_.zero();
    flat_.vars.back().keep = true;
    lie.w[k] = new_var(w, "angular velocity of frame_b relative to frame_a, resolved in frame_b",
                       "rad/s", e.el->span);
    flat_.vars.back().start = w0[k];
    flat_.vars.back().keep = true;
    ks.push_back(coordinate(i, c[k]->coord, c[k]->velocity, Motion::RotationVector));
  }
  V3& theta = lie.theta_expr;
  V3& w = lie.w_expr;
  V3 w_dot;
  for (int k = 0; k < 3; ++k) {
    theta[k] = cx_.symbol(lie.theta[k]);
    w[k] = cx_.symbol(lie.w[k]);
    w_dot[k] = cx_.symbol(ders_.der(lie.w[k]));
  }
  std::array<Expr, 4> q_ref;
  for (int k = 0; k < 4; ++k) q_ref[k] = cx_.symbol(lie.q_ref[k]);
  lie.Q = al_.quaternion_product(q_ref, al_.quaternion_exp(theta, flat_.no_event));
  Step s;
  s.R = al_.quaternion(lie.Q);
  s.r = al_.zero3();
  s.v = al_.zero3();
  s.w = al_.mul(s.R, w);
  s.w_dot = al_.mul(s.R, w_dot);
  s.w_child = w;
  s.w_dot_child = w_dot;
  s.coords = std::move(ks);
  lie_.push_back(lie);
  return s;
}

void Lowering::rotation_vector_equations() {
  for (const LieRotation& lie : lie_) {
    Elem& e = elems_[lie.elem];
    const V3& w = lie.w_expr;
    const V3 rate = al_.rotation_vector_rate(lie.theta_expr, w, flat_.no_event);
    for (int k = 0; k < 3; ++k)
      add_equation(cx_.sub(cx_.symbol(ders_.der(lie.theta[k])), rate[k]), e.el->span,
                   fmt::format("der({0}.theta[{1}]) = (dexp^-1(theta) w)[{1}]  ({2} rotation "
                               "vector)",
                               e.el->path, k + 1, e.el->kind));
    // the quaternion of the rotation and its rate, as the quaternion form has them
    const std::array<Expr, 4> w4 = {cx_.zero(), w[0], w[1], w[2]};
    const std::array<Expr, 4> dq = al_.quaternion_product(lie.Q, w4);
    for (int k = 0; k < 4; ++k) {
      define(e, fmt::format("Q[{}]", k + 1), lie.Q[k]);
      define(e, fmt::format("dQ[{}]", k + 1), cx_.mul(cx_.num(0.5), dq[k]));
    }
    std::array<uint32_t, 10> chart{};
    for (int k = 0; k < 3; ++k) {
      chart[k] = lie.theta[k];
      chart[3 + k] = lie.w[k];
    }
    for (int k = 0; k < 4; ++k) chart[6 + k] = lie.q_ref[k];
    flat_.rotation_charts.push_back(chart);
  }
}

void Lowering::build_graph() {
  for (const auto& el : flat_.mech_elements) {
    if (el.kind == "Frame") continue;
    Elem e;
    e.el = &el;
    e.info = kind_info(el.kind);
    e.joint = joint_kind(el.kind);
    if (!e.info) {
      diags_.report(
          DiagKind::mech_invalid, el.span,
          {"'" + el.path + "' is of the unknown multibody element kind '" + el.kind + "'"});
      throw Failed{};
    }
    elems_.push_back(e);
    // a variant of the kind chosen by a Boolean parameter (JointKind::variant_parameter)
    Elem& b = elems_.back();
    if (b.joint != nullptr && b.joint->variant != nullptr &&
        var(el.path + "." + b.joint->variant_parameter) >= 0 &&
        value(b, b.joint->variant_parameter) != 0.0)
      b.joint = b.joint->variant;
  }
  // union-find over frame paths
  std::map<std::string, std::string> parent;
  std::function<std::string(const std::string&)> find = [&](const std::string& x) {
    auto it = parent.find(x);
    if (it == parent.end()) {
      parent[x] = x;
      return x;
    }
    if (it->second == x) return x;
    std::string r = find(it->second);
    parent[x] = r;
    return r;
  };
  for (const auto& e : elems_)
    for (const char* f : e.info->frames) find(e.el->path + "." + f);
  for (const auto& c : flat_.frame_connections) {
    std::string a = find(c.a), b = find(c.b);
    if (a != b) parent[a] = b;
  }
  std::map<std::string, int> node_of_root;
  for (auto& e : elems_) {
    for (const char* f : e.info->frames) {
      std::string path = e.el->path + "." + f;
      std::string r = find(path);
      auto [it, inserted] = node_of_root.emplace(r, static_cast<int>(nodes_.size()));
      if (inserted) {
        Node n;
        n.name = path;
        nodes_.push_back(std::move(n));
      }
      e.nodes.push_back(it->second);
      node_of_frame_[path] = it->second;
    }
  }
  n_frame_nodes_ = nodes_.size();
  for (size_t i = 0; i < elems_.size(); ++i) {
    if (elems_[i].info->role != Role::World) continue;
    if (world_ >= 0) {
      diags_.report(DiagKind::mech_invalid, elems_[i].el->span,
                    {"the model has a second World '" + elems_[i].el->path + "'"});
      diags_.note(elems_[world_].el->span, "the first World is declared here");
      throw Failed{};
    }
    world_ = static_cast<int>(i);
  }
  if (world_ < 0) {
    diags_.report(DiagKind::mech_no_world, elems_[0].el->span, {elems_[0].el->path});
    diags_.help("declare 'Mechanics.World world;' and connect the mechanism to world.frame");
    throw Failed{};
  }
  root_ = elems_[world_].nodes[0];
  for (auto& e : elems_) {
    if (e.info->role != Role::Edge) continue;
    int c = var(e.el->path + ".cut");
    e.cut = (c >= 0 && value(e, "cut") != 0.0) || (e.joint != nullptr && e.joint->always_cut);
    if (e.cut && e.joint != nullptr && !e.joint->can_be_cut) fail(e, "cannot be cut");
  }
}

void Lowering::build_tree() {
  // Kruskal on the undirected graph: rigid edges first, then joints in declaration order
  std::vector<int> uf(nodes_.size());
  for (size_t i = 0; i < uf.size(); ++i) uf[i] = static_cast<int>(i);
  std::function<int(int)> find = [&](int x) { return uf[x] == x ? x : uf[x] = find(uf[x]); };
  std::vector<size_t> order;
  for (int pass = 0; pass < 2; ++pass)
    for (size_t i = 0; i < elems_.size(); ++i)
      if (elems_[i].info->role == Role::Edge && is_rigid(elems_[i].el->kind) == (pass == 0))
        order.push_back(i);
  for (size_t i : order) {
    Elem& e = elems_[i];
    if (e.cut) continue;
    int a = find(e.nodes[0]), b = find(e.nodes[1]);
    if (a == b) {
      if (e.joint != nullptr && !e.joint->can_be_cut)
        fail(e, "closes a kinematic loop; a " + e.el->kind + " cannot be cut");
      e.cut = true;
      continue;
    }
    uf[a] = b;
    e.in_tree = true;
  }
  // orient from the world: breadth first
  std::vector<std::vector<size_t>> incident(nodes_.size());
  for (size_t i = 0; i < elems_.size(); ++i)
    if (elems_[i].in_tree)
      for (int n : elems_[i].nodes) incident[n].push_back(i);
  std::vector<bool> seen(nodes_.size(), false);
  seen[root_] = true;
  order_ = {root_};
  for (size_t k = 0; k < order_.size(); ++k) {
    int from = order_[k];
    for (size_t i : incident[from]) {
      Elem& e = elems_[i];
      bool forward = e.nodes[0] == from;
      int to = forward ? e.nodes[1] : e.nodes[0];
      if (seen[to]) continue;
      seen[to] = true;
      std::vector<Step> steps = steps_of(i);
      if (!forward) {
        std::reverse(steps.begin(), steps.end());
        for (auto& s : steps) s = inverse(s);
      }
      int parent = from;
      for (size_t j = 0; j < steps.size(); ++j) {
        int child = to;
        if (j + 1 < steps.size()) {
          Node n;
          n.name = e.el->path + "#" + std::to_string(j + 1);
          nodes_.push_back(std::move(n));
          child = static_cast<int>(nodes_.size() - 1);
          seen.push_back(true);
          incident.emplace_back();
        }
        Node& c = nodes_[child];
        c.parent = parent;
        c.step = std::move(steps[j]);
        c.edge = static_cast<int>(i);
        c.edge_forward = forward;
        c.depth = nodes_[parent].depth + 1;
        nodes_[parent].children.push_back(child);
        if (child != to) order_.push_back(child);
        parent = child;
      }
      e.child_node = to;
      order_.push_back(to);
    }
  }
  for (auto& e : elems_) {
    for (size_t j = 0; j < e.nodes.size(); ++j) {
      if (seen[e.nodes[j]]) continue;
      diags_.report(DiagKind::mech_unconnected, e.el->span, {e.el->path + "." + e.info->frames[j]});
      diags_.help(
          "connect it to the world through joints (a free body needs a FreeMotion joint to the "
          "world)");
      throw Failed{};
    }
  }
  int depth = 0;
  for (const auto& n : nodes_) depth = std::max(depth, n.depth);
  recursive_ = opt_.recursive_depth >= 0 ? depth > opt_.recursive_depth : depth > 24;
  if (opt_.inverse_dynamics)
    recursive_ = false;  // its balance unknowns are efforts and multipliers
}

V3 Lowering::keep(const V3& x, int node, const char* what, const char* unit,
                  rt::EquationLevel level) {
  // Only the nodes a joint moves keep their quantities: the root's are known, and a node reached
  // by a rigid step (a FixedTranslation's frame_b) is a constant transform of its parent's kept
  // ones, so its expressions stay small without unknowns of their own (the N-link chain: 9
  // auxiliaries per link instead of 18).
  if (!recursive_ || node == root_ || nodes_[node].step.coords.empty()) return x;
  V3 out;
  for (int i = 0; i < 3; ++i) {
    if (x[i]->is_const()) {
      out[i] = x[i];
      continue;
    }
    std::string name = fmt::format("{}.{}[{}]", nodes_[node].name, what, i + 1);
    uint32_t s = new_var(name, "recursive multibody quantity", unit, flat_.span);
    flat_.vars.back().keep = true;
    flat_.vars.back().auxiliary = level;
    add_equation(cx_.sub(cx_.symbol(s), x[i]), flat_.span, name + " (recursive kinematics)");
    out[i] = cx_.symbol(s);
  }
  return out;
}

void Lowering::kinematics() {
  Elem& w = elems_[world_];
  g_ = pvec(w, "g");
  Node& r = nodes_[root_];
  r.R_w = al_.identity();
  r.p_w = al_.zero3();
  r.w = r.v = r.al = al_.zero3();
  r.a = al_.neg(g_);
  for (int id : order_) {
    if (id == root_) continue;
    Node& c = nodes_[id];
    const Node& p = nodes_[c.parent];
    const Step& s = c.step;
    M3 Rt = al_.transpose(s.R);
    V3 al_rel = s.w_dot[0] != nullptr ? s.w_dot : al_.total_derivative(ders_, s.w);
    V3 a_rel = al_.total_derivative(ders_, s.v);
    c.R_w = al_.mul(p.R_w, s.R);
    c.p_w = al_.add(p.p_w, al_.mul(p.R_w, s.r));
    c.v = keep(al_.mul(Rt, al_.add(al_.add(p.v, al_.cross(p.w, s.r)), s.v)), id, "v", "m/s",
               rt::EquationLevel::Velocity);
    if (s.w_child[0] != nullptr) {
      c.w =
          keep(al_.add(al_.mul(Rt, p.w), s.w_child), id, "w", "rad/s", rt::EquationLevel::Velocity);
      c.al = keep(al_.add(al_.mul(Rt, al_.add(p.al, al_.cross(p.w, s.w))), s.w_dot_child), id, "al",
                  "rad/s2", rt::EquationLevel::Dynamic);
    } else {
      c.w = keep(al_.mul(Rt, al_.add(p.w, s.w)), id, "w", "rad/s", rt::EquationLevel::Velocity);
      c.al = keep(al_.mul(Rt, al_.add(al_.add(p.al, al_.cross(p.w, s.w)), al_rel)), id, "al",
                  "rad/s2", rt::EquationLevel::Dynamic);
    }
    V3 acc = al_.add(p.a, al_.cross(p.al, s.r));
    acc = al_.add(acc, al_.cross(p.w, al_.cross(p.w, s.r)));
    acc = al_.add(acc, al_.scale(cx_.num(2.0), al_.cross(p.w, s.v)));
    acc = al_.add(acc, a_rel);
    c.a = keep(al_.mul(Rt, acc), id, "a", "m/s2", rt::EquationLevel::Dynamic);
  }
}

void Lowering::loads() {
  for (auto& e : elems_) {
    const std::string& k = e.el->kind;
    if (k == "Body") {
      int n = e.nodes[0];
      Node& nd = nodes_[n];
      Expr m = param(e, "m");
      V3 c = pvec(e, "r_cm");
      M3 I = pmat(e, "I");
      V3 a_cm = al_.add(al_.add(nd.a, al_.cross(nd.al, c)), al_.cross(nd.w, al_.cross(nd.w, c)));
      V3 F = al_.scale(m, a_cm);
      V3 M =
          al_.add(al_.add(al_.mul(I, nd.al), al_.cross(nd.w, al_.mul(I, nd.w))), al_.cross(c, F));
      for (int i = 0; i < 3; ++i) {
        nd.f[i].push_back(F[i]);
        nd.m[i].push_back(M[i]);
      }
    } else if (k == "WorldForce") {
      int n = e.nodes[0];
      M3 Rt = al_.transpose(nodes_[n].R_w);
      apply(n, al_.mul(Rt, svec(e, "f")), al_.mul(Rt, svec(e, "t")));
    } else if (k == "FrameForce") {
      apply(e.nodes[0], svec(e, "f"), svec(e, "t"));
    } else if (k == "LineForce") {
      int a = e.nodes[0], b = e.nodes[1];
      V3 d = al_.sub(nodes_[b].p_w, nodes_[a].p_w);
      Expr L = cx_.unary(sym::Op::Sqrt, al_.dot(d, d));
      V3 u = al_.scale(cx_.div(cx_.one(), L), d);
      Expr L_dot = al_.dot(u, al_.sub(world_velocity(b), world_velocity(a)));
      define(e, "L", L);
      define(e, "L_dot", L_dot);
      V3 F_w = al_.scale(sym_of(e, "f"), u);  // on a, toward b
      apply(b, al_.mul(al_.transpose(nodes_[b].R_w), al_.neg(F_w)), al_.zero3());
      apply(a, al_.mul(al_.transpose(nodes_[a].R_w), F_w), al_.zero3());
    } else if (e.joint != nullptr && (e.joint->given_force || e.joint->given_torque)) {
      if (e.cut) continue;  // cut_joints applies them
      apply_pair(e.nodes[0], e.nodes[1], e.joint->given_force ? svec(e, "f") : al_.zero3(),
                 e.joint->given_torque ? svec(e, "t") : al_.zero3());
    }
  }
}

// The generalized force along a coordinate: applied effort, spring and damper.
Expr joint_effort(Expr effort, Expr c, Expr d, Expr rest, Expr q, Expr dq, sym::Context& cx) {
  Expr e = effort;
  if (!c->is_const(0.0)) e = cx.sub(e, cx.mul(c, cx.sub(q, rest)));
  if (!d->is_const(0.0)) e = cx.sub(e, cx.mul(d, dq));
  return e;
}

// The coordinates of a joint that have an effort (JointKinds.h), in step order.
std::vector<JointCoordinate> coordinate_names(const JointKind* k) {
  std::vector<JointCoordinate> c;
  if (k != nullptr)
    for (const JointCoordinate& j : k->coordinates)
      if (j.effort != nullptr) c.push_back(j);
  return c;
}

void Lowering::cut_joints() {
  int loop = 0;
  for (auto& e : elems_) {
    if (!e.cut) continue;
    ++loop;
    int A = e.nodes[0], B = e.nodes[1];
    V3 r_ab = rel_position(A, B);
    M3 R_ab = rel_rotation(A, B);
    std::vector<std::pair<V3, V3>> dirs;  // per row: force and torque direction (frame a)
    std::vector<std::string> what;
    std::vector<Expr> rows;
    V3 ex = {cx_.one(), cx_.zero(), cx_.zero()}, ey = {cx_.zero(), cx_.one(), cx_.zero()},
       ez = {cx_.zero(), cx_.zero(), cx_.one()};
    auto position_row = [&](const V3& dir, const std::string& name) {
      rows.push_back(al_.dot(dir, r_ab));
      dirs.push_back({dir, al_.zero3()});
      what.push_back("position along " + name);
    };
    std::array<double, 3> nn{};
    V3 n, e1, e2;
    auto basis = [&](const char* member) {
      n = axis(e, member, &nn);
      auto [b1, b2] = perpendicular_basis(nn);
      e1 = {cx_.num(b1[0]), cx_.num(b1[1]), cx_.num(b1[2])};
      e2 = {cx_.num(b2[0]), cx_.num(b2[1]), cx_.num(b2[2])};
    };
    auto axis_rows = [&]() {
      V3 u = al_.mul(R_ab, n);
      rows.push_back(al_.dot(e1, u));
      dirs.push_back({al_.zero3(), al_.cross(u, e1)});
      what.push_back("tilt of the axis toward e1");
      rows.push_back(al_.dot(e2, u));
      dirs.push_back({al_.zero3(), al_.cross(u, e2)});
      what.push_back("tilt of the axis toward e2");
    };
    auto full_rotation = [&]() {
      // vee((R - R^T)/2): the rotation vector to first order, zero at closure
      rows.push_back(cx_.mul(cx_.num(0.5), cx_.sub(R_ab[7], R_ab[5])));
      rows.push_back(cx_.mul(cx_.num(0.5), cx_.sub(R_ab[2], R_ab[6])));
      rows.push_back(cx_.mul(cx_.num(0.5), cx_.sub(R_ab[3], R_ab[1])));
      dirs.push_back({al_.zero3(), ex});
      dirs.push_back({al_.zero3(), ey});
      dirs.push_back({al_.zero3(), ez});
      what.insert(what.end(), {"rotation about x", "rotation about y", "rotation about z"});
    };
    auto angle_about = [&](const V3& axis_a, const V3& axis_b, const M3& R) {
      // the angle by which R turns axis_a toward axis_b (both unit, perpendicular, and
      // perpendicular to R's axis): atan2(axis_b.(R axis_a), axis_a.(R axis_a))
      V3 ra = al_.mul(R, axis_a);
      return cx_.binary(sym::Op::Atan2, al_.dot(axis_b, ra), al_.dot(axis_a, ra));
    };
    const JointKind* jk = e.joint;
    if (jk == nullptr || !jk->can_be_cut || jk->fixed == FixedTransform::Translation ||
        jk->fixed == FixedTransform::Rotation)
      fail(e, "cannot be cut");
    const bool has_n = jk->translations == Translations::Perpendicular ||
                       jk->translations == Translations::Normal ||
                       jk->rotations == Rotations::AxisTilt;
    if (has_n) basis("n");
    // the closure rows: what the joint constrains (JointKinds.h)
    switch (jk->translations) {
      case Translations::XYZ:
        position_row(ex, "x");
        position_row(ey, "y");
        position_row(ez, "z");
        break;
      case Translations::Perpendicular:
        position_row(e1, "e1");
        position_row(e2, "e2");
        break;
      case Translations::Normal:
        position_row(n, "the plane normal");
        break;
      case Translations::None:
        break;
    }
    switch (jk->rotations) {
      case Rotations::All:
        full_rotation();
        break;
      case Rotations::AxisTilt:
        axis_rows();
        break;
      case Rotations::AxesAngle: {
        V3 u = al_.mul(R_ab, axis_of(e, Axis::NB));
        V3 na = axis_of(e, Axis::NA);
        rows.push_back(al_.dot(na, u));
        dirs.push_back({al_.zero3(), al_.cross(u, na)});
        what.push_back("angle between the axes");
        break;
      }
      case Rotations::None:
        break;
    }
    // the joint's coordinates as functions of the relative transform
    for (const JointCoordinate& c : jk->coordinates) {
      if (c.motion == Motion::Translation) {
        define(e, c.coord, al_.dot(axis_of(e, c.axis), r_ab));
      } else if (c.motion == Motion::Rotation) {
        V3 first, second;
        M3 R = R_ab;
        switch (c.angle) {
          case AngleFrom::PerpendicularBasis:
            first = e1;
            second = e2;
            break;
          case AngleFrom::PlaneAxes:
            first = axis_of(e, Axis::NX);
            second = axis_of(e, Axis::NxNX);
            break;
          case AngleFrom::UniversalA:
            first = axis_of(e, Axis::NB);
            second = al_.cross(axis_of(e, Axis::NA), first);
            break;
          case AngleFrom::UniversalB:
            first = axis_of(e, Axis::NA);
            second = al_.cross(first, axis_of(e, Axis::NB));
            R = al_.transpose(R_ab);
            break;
          case AngleFrom::None:
            fail(e, "has a rotation coordinate without an angle");
        }
        define(e, c.coord, angle_about(first, second, R));
      } else if (std::string_view(c.coord) == "Q[1]") {
        // the quaternion of R_ab (valid while the relative rotation stays below 180 degrees)
        Expr tr = cx_.add({R_ab[0], R_ab[4], R_ab[8]});
        Expr q0 = cx_.mul(cx_.num(0.5), cx_.unary(sym::Op::Sqrt, cx_.add(cx_.one(), tr)));
        Expr k4 = cx_.div(cx_.num(0.25), q0);
        define(e, "Q[1]", q0);
        define(e, "Q[2]", cx_.mul(k4, cx_.sub(R_ab[7], R_ab[5])));
        define(e, "Q[3]", cx_.mul(k4, cx_.sub(R_ab[2], R_ab[6])));
        define(e, "Q[4]", cx_.mul(k4, cx_.sub(R_ab[3], R_ab[1])));
      }
    }
    if (jk->given_force || jk->given_torque)
      apply_pair(A, B, jk->given_force ? svec(e, "f") : al_.zero3(),
                 jk->given_torque ? svec(e, "t") : al_.zero3());
    // efforts, springs and dampers of the cut joint act as a wrench pair
    V3 F = al_.zero3(), T = al_.zero3();
    auto coord_effort = [&](const char* coord, const char* effort) {
      std::string c = coord;
      Expr q = sym_of(e, c);
      Expr dq = ders_.total_derivative(q);
      std::string rest = c + "_rest";
      Expr E =
          joint_effort(sym_of(e, effort), param(e, "c_" + c), param(e, "d_" + c),
                       var(e.el->path + "." + rest) >= 0 ? param(e, rest) : cx_.zero(), q, dq, cx_);
      return E;
    };
    for (const JointCoordinate& c : coordinate_names(jk)) {
      if (!jk->cut_efforts) {
        if (mentioned(fv(e, c.effort).symbol))
          fail(e, "is cut: its efforts cannot be given; cut another joint of the loop");
        continue;
      }
      V3& sum = c.motion == Motion::Rotation ? T : F;
      sum = al_.add(sum, al_.scale(coord_effort(c.coord, c.effort), axis_of(e, c.axis)));
    }
    if (!jk->cut_efforts)
      for (const JointCoordinate& c : coordinate_names(jk))
        for (const char* spring : {"c_", "d_"})
          if (value(e, spring + std::string(c.coord)) != 0.0)
            fail(e,
                 "is cut: its springs and dampers are not supported; cut another joint of the "
                 "loop");
    apply_pair(A, B, F, T);
    e.effort_F = F;
    e.effort_T = T;
    // the closure rows; their multipliers are the reaction components
    for (size_t j = 0; j < rows.size(); ++j) {
      ClosureRow row;
      row.residual = rows[j];
      row.joint = e.el->path;
      row.what = what[j];
      row.span = e.el->span;
      row.force = dirs[j].first;
      row.torque = dirs[j].second;
      row.node_a = A;
      row.node_b = B;
      row.loop = loop;
      closure_.push_back(row);
    }
  }
}

void Lowering::equations_of_motion() {
  // backward pass: required wrench of each subtree about its node's origin
  for (auto it = order_.rbegin(); it != order_.rend(); ++it) {
    Node& n = nodes_[*it];
    for (int c : n.children) {
      const Node& ch = nodes_[c];
      V3 fc = al_.mul(ch.step.R, ch.F), mc = al_.mul(ch.step.R, ch.M);
      V3 mt = al_.add(mc, al_.cross(ch.step.r, fc));
      for (int i = 0; i < 3; ++i) {
        n.f[i].push_back(fc[i]);
        n.m[i].push_back(mt[i]);
      }
    }
    V3 F, M;
    for (int i = 0; i < 3; ++i) {
      F[i] = cx_.add(std::span<const Expr>(n.f[i]));
      M[i] = cx_.add(std::span<const Expr>(n.m[i]));
    }
    n.F = keep(F, *it, "F", "N", rt::EquationLevel::Dynamic);
    n.M = keep(M, *it, "M", "N.m", rt::EquationLevel::Dynamic);
  }
  for (int id : order_) {
    if (id == root_) continue;
    const Node& c = nodes_[id];
    if (c.step.coords.empty()) continue;
    if (c.step.w_child[0] != nullptr) {
      // a rotation vector's step: d w_child / d w[i] = e_i (w[i] is its coordinate's dq)
      for (int k : c.step.coords) {
        sym::Differentiator d(cx_, coords_[k].dq);
        for (int i = 0; i < 3; ++i) {
          Expr pw = d(c.step.w_child[i]);
          if (!pw->is_const(0.0)) row_terms_[k].push_back(cx_.mul(pw, c.M[i]));
        }
      }
      continue;
    }
    V3 fs = al_.mul(c.step.R, c.F), ms = al_.mul(c.step.R, c.M);
    for (int k : c.step.coords) {
      uint32_t dq = coords_[k].dq;
      sym::Differentiator d(cx_, dq);
      for (int i = 0; i < 3; ++i) {
        Expr pw = d(c.step.w[i]), pv = d(c.step.v[i]);
        if (!pw->is_const(0.0)) row_terms_[k].push_back(cx_.mul(pw, ms[i]));
        if (!pv->is_const(0.0)) row_terms_[k].push_back(cx_.mul(pv, fs[i]));
      }
    }
  }
  // generalized applied forces of tree coordinates
  for (auto& e : elems_) {
    if (!e.in_tree) continue;
    auto names = coordinate_names(e.joint);
    for (size_t j = 0; j < names.size(); ++j) {
      int k = e.coords[j];
      std::string c = names[j].coord;
      std::string rest = c + "_rest";
      Expr E =
          joint_effort(sym_of(e, names[j].effort), param(e, "c_" + c), param(e, "d_" + c),
                       param(e, rest), cx_.symbol(coords_[k].q), cx_.symbol(coords_[k].dq), cx_);
      row_terms_[k].push_back(cx_.neg(E));
    }
  }
  // the equations of motion of the tree coordinates
  for (size_t k = 0; k < coords_.size(); ++k) {
    const Coord& c = coords_[k];
    if (!elems_[c.elem].in_tree) continue;
    const Elem& e = elems_[c.elem];
    add_equation(
        cx_.add(std::span<const Expr>(row_terms_[k])), e.el->span,
        "equation of motion along " + e.el->path + "." + (c.rotation_vector ? c.velocity : c.name),
        rt::EquationRole::Motion);
  }
}

void Lowering::quaternion_rows() {
  for (auto& e : elems_) {
    if (!e.in_tree) continue;
    if (e.joint != nullptr && e.joint->quaternion_offset() >= 0) {
      // unit quaternion: Q.Q - 1 = 0 with its multiplier
      const auto off = static_cast<size_t>(e.joint->quaternion_offset());
      std::vector<Expr> sq;
      for (int j = 0; j < 4; ++j) {
        Expr q = cx_.symbol(coords_[e.coords[off + j]].q);
        sq.push_back(cx_.mul(q, q));
      }
      ClosureRow row;
      row.residual = cx_.sub(cx_.add(std::span<const Expr>(sq)), cx_.one());
      row.joint = e.el->path;
      row.what = "unit length of the quaternion Q";
      row.span = e.el->span;
      row.quaternion_of = static_cast<int>(&e - elems_.data());
      row.quaternion_offset = static_cast<int>(off);
      closure_.push_back(row);
    }
  }
}

void Lowering::sensors() {
  for (auto& e : elems_) {
    const std::string& k = e.el->kind;
    if (k == "FrameSensor") {
      int n = e.nodes[0];
      const Node& nd = nodes_[n];
      define3(e, "r", nd.p_w);
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j)
          define(e, fmt::format("R[{},{}]", i + 1, j + 1), nd.R_w[3 * i + j]);
      define3(e, "v", al_.mul(nd.R_w, nd.v));
      define3(e, "w", al_.mul(nd.R_w, nd.w));
      define3(e, "a", al_.add(al_.mul(nd.R_w, nd.a), g_));
      define3(e, "z", al_.mul(nd.R_w, nd.al));
    } else if (k == "FrameKinematics") {
      // the absolute kinematics of frame_a under the MSL's names (the base of BodyShape, ...)
      const Node& nd = nodes_[e.nodes[0]];
      define3(e, "r_0", nd.p_w);
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j)
          define(e, fmt::format("R[{},{}]", i + 1, j + 1), nd.R_w[3 * i + j]);
      define3(e, "v_0", al_.mul(nd.R_w, nd.v));
      define3(e, "a_0", al_.add(al_.mul(nd.R_w, nd.a), g_));
      define3(e, "w_a", nd.w);
    } else if (k == "DistanceSensor") {
      V3 d = al_.sub(nodes_[e.nodes[1]].p_w, nodes_[e.nodes[0]].p_w);
      define(e, "d", cx_.unary(sym::Op::Sqrt, al_.dot(d, d)));
    }
  }
}

// The shapes of the animation (Shapes.h) and, as outputs of role ShapePose, the poses of the
// frames they are attached to: <frame>.shape_r[1..3] and <frame>.shape_R[i,j], the same
// expressions as the frame's kinematics (docs/animation.md).
void Lowering::shapes() {
  std::vector<mech::ShapeElement> se;
  se.reserve(elems_.size());
  for (const auto& e : elems_) se.push_back({e.el, e.nodes});
  std::vector<rt::Shape> list = mech::element_shapes(flat_, var_index_, se, root_);
  std::map<int, int32_t> frame_of_node;
  auto pose = [&](const std::string& name, Expr value) {
    uint32_t sy = new_var(name, "pose of a shape's frame (animation)", "", flat_.span);
    flat_.vars.back().output_role = rt::OutputRole::ShapePose;
    add_equation(cx_.sub(cx_.symbol(sy), value), flat_.span, name + " (shape pose)");
  };
  auto frame = [&](int node) -> int32_t {
    if (node < 0 || node == root_) return -1;
    auto [it, inserted] =
        frame_of_node.emplace(node, static_cast<int32_t>(flat_.shape_frames.size()));
    if (!inserted) return it->second;
    const Node& nd = nodes_[static_cast<size_t>(node)];
    flat_.shape_frames.push_back(nd.name);
    for (int i = 0; i < 3; ++i) pose(fmt::format("{}.shape_r[{}]", nd.name, i + 1), nd.p_w[i]);
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j)
        pose(fmt::format("{}.shape_R[{},{}]", nd.name, i + 1, j + 1), nd.R_w[3 * i + j]);
    return it->second;
  };
  for (auto& s : list) {
    s.frame = frame(s.frame);
    if (s.stretch) s.frame_b = frame(s.frame_b);
  }
  flat_.shapes = std::move(list);
}

void Lowering::defaults() {
  // efforts and applied loads that no equation of the model mentions are zero
  auto zero_unless_given = [&](Elem& e, const std::string& member) {
    const FlatVar& v = fv(e, member);
    if (mentioned(v.symbol)) return;
    add_equation(cx_.symbol(v.symbol), e.el->span, v.name + " = 0  (not given)");
  };
  for (auto& e : elems_) {
    const std::string& k = e.el->kind;
    bool prescribed = var(e.el->path + ".prescribed") >= 0 && value(e, "prescribed") != 0.0;
    if (!prescribed)
      for (const auto& c : coordinate_names(e.joint)) zero_unless_given(e, c.effort);
    if (prescribed && opt_.inverse_dynamics)  // the actuator efforts are the balance's unknowns
      for (const auto& c : coordinate_names(e.joint)) {
        flat_.vars[var(e.el->path + "." + c.effort)].keep = true;
        // a prescribed coordinate without an equation follows a trajectory given at run time
        // (mbsc --trajectory): q = <joint>.<coord>_trajectory, a parameter the inverse-dynamics
        // driver sets at every sample (it also supplies the derivatives)
        int qi = var(e.el->path + "." + c.coord);
        uint32_t qs = flat_.vars[qi].symbol;
        if (mentioned(qs)) continue;
        flat_.vars[qi].keep = true;  // not q := parameter: the row stays, its time law is external
        std::string name = e.el->path + "." + c.coord + "_trajectory";
        FlatVar p;
        p.name = name;
        p.symbol = cx_.new_symbol(name);
        p.role = VarRole::Parameter;
        p.description = "the trajectory's value of " + flat_.vars[qi].name;
        p.unit = flat_.vars[qi].unit;
        p.span = e.el->span;
        ders_.set_constant(p.symbol);
        flat_.var_of_symbol[p.symbol] = flat_.vars.size();
        var_index_[name] = flat_.vars.size();
        trajectory_params_.push_back({flat_.vars.size(), static_cast<size_t>(qi)});
        flat_.vars.push_back(p);
        FlatEquation& eq =
            add_equation(cx_.sub(cx_.symbol(qs), cx_.symbol(p.symbol)), e.el->span,
                         "trajectory of " + flat_.vars[qi].name, rt::EquationRole::Trajectory);
        eq.param = p.symbol;
        eq.subject = flat_.vars[qi].name;
      }
    const bool load = k == "WorldForce" || k == "FrameForce";
    const bool force = load || (e.joint != nullptr && e.joint->given_force);
    const bool torque = load || (e.joint != nullptr && e.joint->given_torque);
    for (int i = 1; i <= 3; ++i) {
      if (torque) zero_unless_given(e, fmt::format("t[{}]", i));
      if (force) zero_unless_given(e, fmt::format("f[{}]", i));
    }
  }
}

bool Lowering::run() {
  for (size_t i = 0; i < flat_.vars.size(); ++i) var_index_[flat_.vars[i].name] = i;
  for (const auto& eq : flat_.equations)
    for (uint32_t s : sym::free_symbols(eq.residual)) mentioned_.insert(s);
  try {
    build_graph();
    build_tree();
    if (!lie_.empty())
      for (const Elem& e : elems_)
        if (e.cut) {
          diags_.report(DiagKind::mech_invalid, elems_[lie_[0].elem].el->span,
                        {"'" + elems_[lie_[0].elem].el->path +
                         "' has lie_group = true in a mechanism with a closed loop, which is not "
                         "supported yet"});
          diags_.note(e.el->span, "the loop is closed at '" + e.el->path + "'");
          diags_.help("use the quaternion form (lie_group = false) in closed loops");
          throw Failed{};
        }
    row_terms_.assign(coords_.size(), {});
    kinematics();
    loads();
    cut_joints();
    quaternion_rows();
    rotation_vector_equations();
    defaults();
    if (!assemble()) return false;
    // a trajectory parameter starts at its coordinate's assembled start value
    for (auto [p, q] : trajectory_params_)
      flat_.vars[p].value = flat_.vars[q].start ? sym::evaluate(flat_.vars[q].start, {}) : 0.0;
    multipliers();
    if (opt_.inverse_dynamics) body_balance();  // before the backward pass adds to Node::f, m
    equations_of_motion();
    cut_force_torque();
    sensors();
    if (opt_.animation) shapes();
  } catch (const Failed&) {
    return false;
  }
  if (emit_) print(*emit_);
  for (auto& eq : new_equations_) flat_.equations.push_back(std::move(eq));
  return !diags_.has_errors();
}

bool Lowering::assemble() {
  // tree coordinates and what assembly may move
  std::vector<AssemblyCoord> ac;
  for (auto& e : elems_)
    if (e.in_tree)
      for (int k : e.coords) {
        if (coords_[k].rotation_vector) continue;  // no closure row reaches it (run() refuses)
        AssemblyCoord a;
        a.q = coords_[k].q;
        a.dq = coords_[k].dq;
        a.var = coords_[k].var;
        a.vel_var = coords_[k].vel_var;
        ac.push_back(a);
      }
  // plain equations of the model that only involve tree coordinates, parameters and time are
  // part of the position problem (prescribed motion)
  std::set<uint32_t> qsyms;
  for (const auto& a : ac) qsyms.insert(a.q);
  std::vector<ClosureRow> extra;
  for (const auto& eq : flat_.equations) {
    bool only = true, any = false;
    // a prescribed cut joint: its coordinate is a function of the tree coordinates
    Expr residual = sym::substitute(cx_, eq.residual, cut_def_);
    for (uint32_t s : sym::free_symbols(residual)) {
      if (qsyms.count(s)) {
        any = true;
        continue;
      }
      if (s == flat_.time_symbol) continue;
      auto it = flat_.var_of_symbol.find(s);
      // an input is no parameter here: a constraint on it cannot be differentiated (BuildDae)
      if (it != flat_.var_of_symbol.end() && flat_.vars[it->second].role != VarRole::Variable &&
          flat_.vars[it->second].role != VarRole::Input)
        continue;
      only = false;
    }
    if (!only || !any) continue;
    ClosureRow r;
    r.residual = residual;
    r.joint = "";
    r.what = eq.text;
    r.span = eq.span;
    r.user = true;
    extra.push_back(r);
  }
  return assemble_mechanism(flat_, cx_, ders_, ac, closure_, extra, diags_, keep_,
                            /*remove_redundant=*/true, opt_.assemble_velocities);
}

void Lowering::multipliers() {
  // multipliers and their reaction wrenches for the rows that stay
  std::map<std::string, int> count;
  for (size_t j = 0; j < closure_.size(); ++j) {
    ClosureRow& row = closure_[j];
    if (!keep_[j] && !(opt_.inverse_dynamics && row.quaternion_of < 0)) continue;
    std::string name = row.joint + ".lambda[" + std::to_string(++count[row.joint]) + "]";
    uint32_t l = new_var(name, "constraint multiplier: " + row.what, "", row.span);
    flat_.vars.back().keep = true;  // an index-3 multiplier, never substituted
    flat_.vars.back().multiplier = keep_[j];
    row.multiplier = l;
    if (keep_[j]) {
      FlatEquation& eq = add_equation(
          row.residual, row.span, "closure at '" + row.joint + "': " + row.what,
          row.quaternion_of < 0 ? rt::EquationRole::Closure : rt::EquationRole::UnitQuaternion);
      if (row.quaternion_of < 0) eq.subject = row.joint;
    } else {
      // inverse dynamics: the reaction of a redundant row still acts on the bodies; the balance
      // analysis finds that the motion does not determine it (this placeholder row is not part
      // of the balance)
      add_equation(cx_.symbol(l), row.span,
                   "redundant closure row at '" + row.joint + "': " + row.what +
                       " (its multiplier is left to the inverse-dynamics analysis)");
      // and its residual as an output, so that the reconstruction is checked against the full
      // closure conditions, the redundant rows included
      // and velocity and acceleration forms (the total derivatives; der(der(q)) are the
      // accelerations)
      Expr level = row.residual;
      const std::pair<const char*, rt::OutputRole> kinds[] = {
          {"closure_check", rt::OutputRole::ClosureCheck},
          {"closure_check_v", rt::OutputRole::ClosureCheckVelocity},
          {"closure_check_a", rt::OutputRole::ClosureCheckAcceleration}};
      for (const auto& [kind, role] : kinds) {
        std::string check =
            fmt::format("{}.{}[{}]", row.joint, kind, std::to_string(count[row.joint]));
        uint32_t c =
            new_var(check, "residual of the redundant closure row: " + row.what, "", row.span);
        flat_.vars.back().output_role = role;
        add_equation(cx_.sub(cx_.symbol(c), level), row.span, check + " (closure check)");
        level = ders_.total_derivative(level);
      }
    }
    Expr lam = cx_.symbol(l);
    if (row.quaternion_of >= 0) {
      // Q.Q = 1 with multiplier; the mass matrix 4 E^T I E is singular along Q, so each row also
      // gets Q_i (Q.Q'' + Q'.Q'), the second derivative of the norm (zero on the solution): the
      // leading matrix becomes regular and the multiplier stays zero instead of oscillating
      Elem& e = elems_[row.quaternion_of];
      std::vector<Expr> qq, dd;
      for (int i = 0; i < 4; ++i) {
        const Coord& c = coords_[e.coords[row.quaternion_offset + i]];
        Expr dq = cx_.symbol(c.dq);
        qq.push_back(cx_.mul(cx_.symbol(c.q), cx_.symbol(ders_.der(c.dq))));
        dd.push_back(cx_.mul(dq, dq));
      }
      Expr norm2 = cx_.add(cx_.add(std::span<const Expr>(qq)), cx_.add(std::span<const Expr>(dd)));
      for (int i = 0; i < 4; ++i) {
        int k = e.coords[row.quaternion_offset + i];
        Expr q = cx_.symbol(coords_[k].q);
        row_terms_[k].push_back(cx_.mul(cx_.mul(cx_.num(2.0), q), lam));
        row_terms_[k].push_back(cx_.mul(q, norm2));
      }
      continue;
    }
    // the reaction wrench on node b (frame a coordinates), opposite on node a
    apply_pair(row.node_a, row.node_b, al_.scale(lam, row.force), al_.scale(lam, row.torque));
  }
}

std::pair<V3, V3> Lowering::transmitted(const Elem& e) {
  int A = e.nodes[0], B = e.nodes[1];
  if (e.in_tree) {
    const Node& child = nodes_[e.child_node];
    if (e.child_node == B) {  // the subtree behind frame_b gets child.F, child.M (frame b)
      M3 R_ab = rel_rotation(A, B);
      return {al_.mul(R_ab, child.F), al_.mul(R_ab, child.M)};
    }
    // the tree runs from b to a: frame_a's side is the subtree, and gets child.F, child.M (at a's
    // origin, frame a); frame_b's side gets the opposite, moved to b's origin
    V3 r_ab = rel_position(A, B);
    return {al_.neg(child.F), al_.sub(al_.cross(r_ab, child.F), child.M)};
  }
  V3 F = e.effort_F[0] ? e.effort_F : al_.zero3(), T = e.effort_T[0] ? e.effort_T : al_.zero3();
  for (const auto& row : closure_) {
    if (row.joint != e.el->path || row.multiplier == 0) continue;
    F = al_.add(F, al_.scale(cx_.symbol(row.multiplier), row.force));
    T = al_.add(T, al_.scale(cx_.symbol(row.multiplier), row.torque));
  }
  return {F, T};
}

// The transform of node b in node a (x_a = R x_b + r) along the tree steps between them; one of
// the two must be an ancestor of the other (the two frames of a tree joint).
std::pair<M3, V3> Lowering::relative_by_steps(int a, int b) {
  auto up = [&](int from, int to) -> std::optional<std::pair<M3, V3>> {
    M3 R = al_.identity();
    V3 r = al_.zero3();
    for (int n = from; n != to; n = nodes_[n].parent) {
      if (n < 0 || n == root_) return std::nullopt;
      const Step& s = nodes_[n].step;
      r = al_.add(s.r, al_.mul(s.R, r));
      R = al_.mul(s.R, R);
    }
    return std::make_pair(R, r);
  };
  if (auto ab = up(b, a)) return *ab;
  auto ba = up(a, b);
  M3 Rt = al_.transpose(ba->first);
  return {Rt, al_.neg(al_.mul(Rt, ba->second))};
}

// The second formulation of the balance for inverse dynamics (seed 003): a spatial Newton-Euler
// balance for every moving rigid aggregate (nodes joined by rigid tree edges), in which every
// tree joint's wrench is written as reaction coordinates on a basis reciprocal to its motion plus
// its efforts along the motion, acting on its two aggregates with opposite signs. The cut
// joints' reaction coordinates are their multipliers (already applied to the nodes).
void Lowering::body_balance() {
  BodyBalance& bb = flat_.body_balance;
  V3 ex = {cx_.one(), cx_.zero(), cx_.zero()}, ey = {cx_.zero(), cx_.one(), cx_.zero()},
     ez = {cx_.zero(), cx_.zero(), cx_.one()};
  for (auto& e : elems_) {
    if (!e.in_tree || e.info->role != Role::Edge || is_rigid(e.el->kind)) continue;
    std::vector<std::pair<V3, V3>> basis;  // force and torque directions, frame_a axes
    std::vector<std::string> what;
    auto force = [&](const V3& d, const std::string& name) {
      basis.push_back({d, al_.zero3()});
      what.push_back("force along " + name);
    };
    auto torque = [&](const V3& d, const std::string& name) {
      basis.push_back({al_.zero3(), d});
      what.push_back("torque about " + name);
    };
    // the generalized force along the joint's j-th coordinate (effort, spring, damper)
    auto effort = [&](size_t j) {
      auto names = coordinate_names(e.joint);
      const Coord& c = coords_[e.coords[j]];
      std::string q = names[j].coord;
      return joint_effort(sym_of(e, names[j].effort), param(e, "c_" + q), param(e, "d_" + q),
                          param(e, q + "_rest"), cx_.symbol(c.q), cx_.symbol(c.dq), cx_);
    };
    int A = e.nodes[0], B = e.nodes[1];
    // (no structured binding: the lambdas below capture R_ab, which clang 14 does not allow)
    const std::pair<M3, V3> relative = relative_by_steps(A, B);
    const M3& R_ab = relative.first;
    const V3& r_ab = relative.second;
    V3 F = al_.zero3(), T = al_.zero3();  // efforts and given loads, frame_a axes, about b
    V3 given_F = al_.zero3(), given_T = al_.zero3();  // applied as a pair by loads() already
    const JointKind* jk = e.joint;
    if (jk == nullptr || jk->coordinates.empty())
      fail(e, "has no reaction basis for the body-wise balance");
    std::array<double, 3> nn{};
    V3 n, e1, e2;
    if (jk->translations == Translations::Perpendicular ||
        jk->translations == Translations::Normal || jk->rotations == Rotations::AxisTilt) {
      n = axis(e, "n", &nn);
      auto [b1, b2] = perpendicular_basis(nn);
      e1 = {cx_.num(b1[0]), cx_.num(b1[1]), cx_.num(b1[2])};
      e2 = {cx_.num(b2[0]), cx_.num(b2[1]), cx_.num(b2[2])};
    }
    // the reaction basis: what the joint constrains (JointKinds.h)
    switch (jk->translations) {
      case Translations::XYZ:
        force(ex, "x");
        force(ey, "y");
        force(ez, "z");
        break;
      case Translations::Perpendicular:
        force(e1, "e1");
        force(e2, "e2");
        break;
      case Translations::Normal:
        force(n, "the plane normal");
        break;
      case Translations::None:
        break;
    }
    // a direction in frame_a: n_b turns with the first rotation of a Universal
    auto direction = [&](Axis a) {
      return a == Axis::NB ? al_.mul(R_ab, axis_of(e, a)) : axis_of(e, a);
    };
    switch (jk->rotations) {
      case Rotations::All:
        torque(ex, "x");
        torque(ey, "y");
        torque(ez, "z");
        break;
      case Rotations::AxisTilt:
        if (jk->tilt_first == Axis::None) {
          torque(e1, "e1");
          torque(e2, "e2");
        } else {
          torque(axis_of(e, jk->tilt_first), "n_x");
          torque(axis_of(e, jk->tilt_second), "n x n_x");
        }
        break;
      case Rotations::AxesAngle:
        torque(al_.cross(direction(Axis::NA), direction(Axis::NB)), "n_a x n_b");
        break;
      case Rotations::None:
        break;
    }
    // the efforts along the coordinates, and the joint's given loads
    const std::vector<JointCoordinate> efforts = coordinate_names(jk);
    for (size_t j = 0; j < efforts.size(); ++j) {
      V3& sum = efforts[j].motion == Motion::Rotation ? T : F;
      sum = al_.add(sum, al_.scale(effort(j), direction(efforts[j].axis)));
    }
    if (jk->given_force) given_F = svec(e, "f");
    if (jk->given_torque) given_T = svec(e, "t");
    for (size_t j = 0; j < basis.size(); ++j) {
      std::string name = fmt::format("{}.reaction[{}]", e.el->path, j + 1);
      uint32_t r = cx_.new_symbol(name);
      bb.reactions.push_back(r);
      bb.reaction_names.push_back(name + ": " + what[j]);
      F = al_.add(F, al_.scale(cx_.symbol(r), basis[j].first));
      T = al_.add(T, al_.scale(cx_.symbol(r), basis[j].second));
    }
    // on b at its origin, and the opposite on a at the same point
    M3 R_ba = al_.transpose(R_ab);
    apply(B, al_.mul(R_ba, F), al_.mul(R_ba, T), true);
    apply(A, al_.neg(F), al_.neg(al_.add(T, al_.cross(r_ab, F))), true);
    V3 out_F = al_.add(F, given_F), out_T = al_.add(T, given_T);
    for (int kk = 0; kk < 2; ++kk)
      for (int i = 0; i < 3; ++i) {
        bb.wrench_names.push_back(
            fmt::format("{}.reaction_{}[{}]", e.el->path, kk == 0 ? "f" : "t", i + 1));
        bb.wrenches.push_back((kk == 0 ? out_F : out_T)[i]);
      }
  }
  // the cut joints' wrenches are their multipliers along the rows' directions, as reported
  for (auto& e : elems_) {
    if (!e.cut || e.info->role != Role::Edge || is_rigid(e.el->kind)) continue;
    auto [F, T] = transmitted(e);
    for (int kk = 0; kk < 2; ++kk)
      for (int i = 0; i < 3; ++i) {
        bb.wrench_names.push_back(
            fmt::format("{}.reaction_{}[{}]", e.el->path, kk == 0 ? "f" : "t", i + 1));
        bb.wrenches.push_back((kk == 0 ? F : T)[i]);
      }
  }
  // rigid aggregates: a node reached by a rigid tree edge belongs to its parent's aggregate; the
  // nodes inside multi-step joints carry no loads and are not bodies
  std::vector<int> top(nodes_.size(), -1);
  for (int id : order_) {
    const Node& nd = nodes_[id];
    bool rigid = id != root_ && is_rigid(elems_[nd.edge].el->kind);
    top[id] = id == root_ ? root_ : rigid ? top[nd.parent] : id;
  }
  // each node's required wrench (inertia minus applied loads, minus the joints' wrenches) about
  // its origin, accumulated into the aggregate's top node along the rigid steps
  std::vector<V3> F(nodes_.size()), M(nodes_.size());
  for (auto it = order_.rbegin(); it != order_.rend(); ++it) {
    int id = *it;
    Node& nd = nodes_[id];
    for (int i = 0; i < 3; ++i) {
      std::vector<Expr> f = nd.f[i], m = nd.m[i];
      f.insert(f.end(), nd.bf[i].begin(), nd.bf[i].end());
      m.insert(m.end(), nd.bm[i].begin(), nd.bm[i].end());
      F[id][i] = cx_.add(std::span<const Expr>(f));
      M[id][i] = cx_.add(std::span<const Expr>(m));
    }
    if (id == root_ || top[id] == id) continue;
    // into the parent (same aggregate): x_parent = R x + r
    Node& p = nodes_[nd.parent];
    V3 fp = al_.mul(nd.step.R, F[id]);
    V3 mp = al_.add(al_.mul(nd.step.R, M[id]), al_.cross(nd.step.r, fp));
    for (int i = 0; i < 3; ++i) {
      p.bf[i].push_back(fp[i]);
      p.bm[i].push_back(mp[i]);
    }
  }
  for (int id : order_) {
    if (id == root_ || top[id] != id || static_cast<size_t>(id) >= n_frame_nodes_ ||
        top[id] == root_)
      continue;
    const char* axes[] = {"x", "y", "z"};
    for (int kk = 0; kk < 2; ++kk)
      for (int i = 0; i < 3; ++i) {
        bb.rows.push_back((kk == 0 ? F : M)[id][i]);
        bb.row_names.push_back(fmt::format("balance of the body at {}: {} along its {}",
                                           nodes_[id].name, kk == 0 ? "force" : "moment", axes[i]));
      }
  }
}

void Lowering::cut_force_torque() {
  for (auto& e : elems_) {
    if (e.joint == nullptr || !e.joint->measures_wrench) continue;
    // frames a and b coincide, so "resolved in frame_a" and "in frame_b" are the same
    auto [F, T] = transmitted(e);
    int resolve = static_cast<int>(value(e, "resolve"));
    if (resolve == 3) {
      F = al_.mul(nodes_[e.nodes[0]].R_w, F);
      T = al_.mul(nodes_[e.nodes[0]].R_w, T);
    } else if (resolve != 1 && resolve != 2) {
      fail(e, "has resolve = " + std::to_string(resolve) +
                  "; use 1 (frame_a), 2 (frame_b) or 3 (world)");
    }
    define3(e, "f", F);
    define3(e, "t", T);
    for (const char* member : {"f", "t"})
      for (int i = 1; i <= 3; ++i)
        flat_.vars[static_cast<size_t>(var(fmt::format("{}.{}[{}]", e.el->path, member, i)))]
            .output_role = rt::OutputRole::SensorWrench;
  }
  if (!opt_.reactions && !opt_.inverse_dynamics) return;
  // --reactions: the wrench every joint transmits, as outputs
  for (auto& e : elems_) {
    if (e.info->role != Role::Edge || is_rigid(e.el->kind)) continue;
    auto [F, T] = transmitted(e);
    for (int k = 0; k < 2; ++k)
      for (int i = 0; i < 3; ++i) {
        std::string name = fmt::format("{}.reaction_{}[{}]", e.el->path, k == 0 ? "f" : "t", i + 1);
        uint32_t sy = new_var(name,
                              k == 0 ? "force frame_a's side exerts on frame_b's side, frame_a"
                                     : "torque about frame_b's origin, frame_a",
                              k == 0 ? "N" : "N.m", e.el->span);
        flat_.vars.back().output_role = rt::OutputRole::JointWrench;
        add_equation(cx_.sub(cx_.symbol(sy), (k == 0 ? F : T)[i]), e.el->span,
                     name + " (reaction wrench)");
      }
  }
}

void Lowering::print(std::ostream& os) const {
  os << "mechanism " << flat_.name << ": " << nodes_.size() << " frames, " << coords_.size()
     << " joint coordinates, " << (recursive_ ? "recursive" : "condensed") << " form\n";
  os << "tree (from the world):\n";
  std::function<void(int, int)> walk = [&](int n, int indent) {
    const Node& nd = nodes_[n];
    os << std::string(2 * indent + 2, ' ') << nd.name;
    if (nd.edge >= 0)
      os << "  via " << elems_[nd.edge].el->path << (nd.edge_forward ? "" : " (reversed)");
    os << "\n";
    for (int c : nd.children) walk(c, indent + 1);
  };
  walk(root_, 0);
  for (const auto& e : elems_)
    if (e.cut) os << "loop closed by " << e.el->path << " (" << e.el->kind << ")\n";
  for (const auto& r : closure_)
    os << "  constraint " << (r.joint.empty() ? "" : r.joint + ": ") << r.what
       << (r.multiplier ? "" : "  [removed: redundant]") << "\n";
}

}  // namespace

bool lower_mechanics(FlatModel& flat, sym::Context& cx, DerivativeTable& ders,
                     const MechOptions& options, DiagnosticEngine& diags, std::ostream* emit) {
  if (flat.mech_elements.empty() && flat.frame_connections.empty()) return true;
  bool any = false;
  for (const auto& e : flat.mech_elements) any |= e.kind != "Frame";
  if (!any) return true;
  Lowering l(flat, cx, ders, options, diags, emit);
  return l.run();
}

}  // namespace mbs
