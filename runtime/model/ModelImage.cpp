// The model image: one list of CompiledModel's fields (transfer) serves writing and reading.
#include "runtime/model/ModelImage.h"

#include <bit>
#include <cstring>
#include <type_traits>

namespace mbs::rt {

namespace {

constexpr char kMagic[] = "mbs-model\n";  // 10 bytes, without the terminating zero
constexpr size_t kMagicBytes = sizeof kMagic - 1;

// A field added to CompiledModel (or one of the structs it holds) must be added to transfer()
// below, and kModelImageVersion bumped; these sizes make the build say so. (Sizes of the
// libstdc++ x86-64 ABI that mbs builds with; on another ABI, update them after checking.)
#if defined(__x86_64__) && defined(__GLIBCXX__)
static_assert(sizeof(Kernel) == 48, "Kernel changed: update ModelImage.cpp");
static_assert(sizeof(SparseKernel) == 104, "SparseKernel changed: update ModelImage.cpp");
static_assert(sizeof(SourceRef) == 72, "SourceRef changed: update ModelImage.cpp");
static_assert(sizeof(Unknown) == 104, "Unknown changed: update ModelImage.cpp");
static_assert(sizeof(Shape) == 216, "Shape changed: update ModelImage.cpp");
static_assert(sizeof(OutputSource) == 168, "OutputSource changed: update ModelImage.cpp");
static_assert(sizeof(CompiledModel) == 3960, "CompiledModel changed: update ModelImage.cpp");
#endif

// Primitive values: fixed-width little-endian integers, doubles as their IEEE bits, strings
// with a 64-bit length. Composite values are written by the xfer() overloads below, which
// Writer and Reader share.
class Writer {
 public:
  static constexpr bool reading = false;
  // counting: only the size of the image is summed up in `size` (a first pass, so that `out`
  // is allocated once: growing it by doubling held up to three times the image at once)
  explicit Writer(bool counting = false) : counting_(counting) {}
  std::string out;
  size_t size = 0;

  void le(uint64_t x, int bytes) {
    size += static_cast<size_t>(bytes);
    if (counting_) return;
    for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((x >> (8 * i)) & 0xff));
  }
  void prim(int32_t& x) { le(static_cast<uint32_t>(x), 4); }
  void prim(uint32_t& x) { le(x, 4); }
  void prim(uint8_t& x) { le(x, 1); }
  void prim(bool& b) { le(b ? 1 : 0, 1); }
  void prim(double& x) { le(std::bit_cast<uint64_t>(x), 8); }
  void prim(std::string& s) {
    le(s.size(), 8);
    size += s.size();
    if (!counting_) out += s;
  }
  template <class E>
  requires std::is_enum_v<E>
  void prim(E& e) { le(static_cast<uint8_t>(e), 1); }
  // the length of a list
  bool length(size_t& n) {
    le(n, 8);
    return true;
  }

 private:
  bool counting_ = false;
};

class Reader {
 public:
  static constexpr bool reading = true;
  explicit Reader(std::string_view in) : in_(in) {}
  std::string error;  // the first problem

  bool ok() const { return error.empty(); }
  size_t left() const { return in_.size() - at_; }
  uint64_t le(int bytes) {
    const char* p = take(static_cast<size_t>(bytes));
    if (p == nullptr) return 0;
    uint64_t x = 0;
    for (int i = 0; i < bytes; ++i) x |= uint64_t{static_cast<unsigned char>(p[i])} << (8 * i);
    return x;
  }
  void prim(int32_t& x) { x = static_cast<int32_t>(static_cast<uint32_t>(le(4))); }
  void prim(uint32_t& x) { x = static_cast<uint32_t>(le(4)); }
  void prim(uint8_t& x) { x = static_cast<uint8_t>(le(1)); }
  void prim(bool& b) {
    const uint64_t x = le(1);
    if (x > 1) fail("a flag of value " + std::to_string(x));
    b = x == 1;
  }
  void prim(double& x) { x = std::bit_cast<double>(le(8)); }
  void prim(std::string& s) {
    const uint64_t n = le(8);
    if (n > left()) return fail("a string of " + std::to_string(n) + " bytes");
    const char* p = take(n);
    if (p != nullptr) s.assign(p, n);
  }
  template <class E>
  requires std::is_enum_v<E>
  void prim(E& e) { e = static_cast<E>(static_cast<uint8_t>(le(1))); }
  // the length of a list: every element takes at least one byte, so a length beyond what is
  // left is damage (and is not allocated)
  bool length(size_t& n) {
    const uint64_t x = le(8);
    if (ok() && x > left()) fail("a list of " + std::to_string(x) + " elements");
    n = ok() ? static_cast<size_t>(x) : 0;
    return ok();
  }

 private:
  void fail(std::string what) {
    if (ok()) error = std::move(what) + " at byte " + std::to_string(at_);
  }
  const char* take(size_t n) {
    if (!ok()) return nullptr;
    if (n > left()) {
      fail("truncated");
      return nullptr;
    }
    const char* p = in_.data() + at_;
    at_ += n;
    return p;
  }
  std::string_view in_;
  size_t at_ = 0;
};

template <class IO, class T>
void xfer(IO& io, T& x) {
  io.prim(x);
}
template <class IO, class T>
void xfer(IO& io, std::vector<T>& v) {
  size_t n = v.size();
  if (!io.length(n)) return;
  if constexpr (IO::reading) v.resize(n);
  for (T& x : v) xfer(io, x);
}
template <class IO>
void xfer(IO& io, Kernel& k) {  // the code is named by its symbol, not stored
  xfer(io, k.n_out);
  xfer(io, k.symbol);
}
template <class IO>
void xfer(IO& io, SparseKernel& k) {
  xfer(io, k.values);
  xfer(io, k.rows);
  xfer(io, k.cols);
  xfer(io, k.row);
  xfer(io, k.col);
}
template <class IO>
void xfer(IO& io, SourceRef& r) {
  xfer(io, r.file);
  xfer(io, r.line);
  xfer(io, r.col);
  xfer(io, r.text);
}
template <class IO>
void xfer(IO& io, Unknown& u) {
  xfer(io, u.name);
  xfer(io, u.source);
}
template <class IO>
void xfer(IO& io, OutputSource& o) {
  xfer(io, o.kind);
  xfer(io, o.declaration);
  xfer(io, o.definition);
  xfer(io, o.alias_slot);
  xfer(io, o.alias_scale);
}

template <class IO>
void xfer(IO& io, std::array<double, 3>& a) {
  for (double& x : a) io.prim(x);
}
template <class IO>
void xfer(IO& io, Shape& s) {
  xfer(io, s.element);
  xfer(io, s.part);
  xfer(io, s.type);
  xfer(io, s.frame);
  xfer(io, s.stretch);
  xfer(io, s.frame_b);
  xfer(io, s.r_shape);
  xfer(io, s.length_direction);
  xfer(io, s.width_direction);
  xfer(io, s.length);
  xfer(io, s.width);
  xfer(io, s.height);
  xfer(io, s.extra);
  xfer(io, s.color);
  xfer(io, s.specular);
}

// Every field of CompiledModel in declaration order (code_owner excepted).
template <class IO>
void transfer(IO& io, CompiledModel& m) {
  xfer(io, m.name);
  xfer(io, m.experiment_stop_time);
  xfer(io, m.experiment_interval);
  xfer(io, m.experiment_tolerance);
  xfer(io, m.n_v);
  xfer(io, m.slot_time);
  xfer(io, m.n_q);
  xfer(io, m.n_y);
  xfer(io, m.n_z);
  xfer(io, m.q_slot);
  xfer(io, m.qd_slot);
  xfer(io, m.qdd_slot);
  xfer(io, m.y_slot);
  xfer(io, m.yd_slot);
  xfer(io, m.z_slot);
  xfer(io, m.slot_c_q);
  xfer(io, m.slot_c_qd);
  xfer(io, m.slot_c_y);
  xfer(io, m.v0);
  xfer(io, m.q);
  xfer(io, m.y);
  xfer(io, m.z);
  xfer(io, m.z_level);
  xfer(io, m.eq_level);
  xfer(io, m.eq_source);
  xfer(io, m.eq_role);
  xfer(io, m.eq_param_slot);
  xfer(io, m.eq_subject);
  xfer(io, m.residual);
  xfer(io, m.newton_matrix);
  xfer(io, m.init_residual);
  xfer(io, m.init_matrix);
  xfer(io, m.constant_leading_matrix);
  xfer(io, m.start_compile_time);
  xfer(io, m.outputs);
  xfer(io, m.output_names);
  xfer(io, m.output_role);
  xfer(io, m.output_source);
  xfer(io, m.output_unit);
  xfer(io, m.output_description);
  xfer(io, m.output_interface);
  xfer(io, m.output_discrete);
  xfer(io, m.output_type);
  xfer(io, m.outputs_z);
  xfer(io, m.constraint_g);
  xfer(io, m.constraint_gd);
  xfer(io, m.constraint_gamma);
  xfer(io, m.constraint_G);
  xfer(io, m.body_rows);
  xfer(io, m.body_wrench);
  xfer(io, m.body_rows_u);
  xfer(io, m.body_wrench_u);
  xfer(io, m.body_row_names);
  xfer(io, m.body_reaction_names);
  xfer(io, m.body_wrench_names);
  xfer(io, m.inverse_balance);
  xfer(io, m.inverse_output_columns);
  xfer(io, m.inverse_outputs_z_row);
  xfer(io, m.inverse_outputs_z_col);
  xfer(io, m.mass_matrix);
  xfer(io, m.jac_q);
  xfer(io, m.jac_qd);
  xfer(io, m.jac_y);
  xfer(io, m.jac_z);
  xfer(io, m.index2_residual);
  xfer(io, m.index2_matrix);
  xfer(io, m.initial_values);
  xfer(io, m.inputs);
  xfer(io, m.input_slot);
  xfer(io, m.parameters);
  xfer(io, m.parameter_slot);
  xfer(io, m.parameter_compile_time);
  xfer(io, m.parameter_derived);
  xfer(io, m.parameter_type);
  xfer(io, m.parameter_min);
  xfer(io, m.parameter_max);
  xfer(io, m.parameter_unit);
  xfer(io, m.parameter_description);
  xfer(io, m.parameter_bindings);
  xfer(io, m.parameter_binding_passes);
  xfer(io, m.sens_F_p);
  xfer(io, m.sens_init);
  xfer(io, m.sens_start);
  xfer(io, m.sens_bindings);
  xfer(io, m.sens_outputs);
  xfer(io, m.events);
  xfer(io, m.event_reinit);
  xfer(io, m.n_crossings);
  xfer(io, m.n_switches);
  xfer(io, m.when_first_branch);
  xfer(io, m.branch_first_reinit);
  xfer(io, m.branch_source);
  xfer(io, m.reinit_slot);
  xfer(io, m.reinit_scale);
  xfer(io, m.reinit_source);
  xfer(io, m.pre_value_slot);
  xfer(io, m.pre_slot);
  xfer(io, m.slot_initial);
  xfer(io, m.slot_terminal);
  xfer(io, m.branch_initial);
  xfer(io, m.crossing_side_slot);
  xfer(io, m.rotation_charts);
  xfer(io, m.z_auxiliary);
  xfer(io, m.shapes);
  xfer(io, m.shape_frames);
  xfer(io, m.shape_frame_column);
}

// The sizes every slot index and pattern must respect; "" or the first inconsistency. A damaged
// image that passed its checksum (written by a faulty build) must not make a solver index out
// of bounds.
std::string check_consistency(const CompiledModel& m) {
  auto slot_ok = [&](int32_t s) { return s >= 0 && s < m.n_v; };
  auto slots_ok = [&](const std::vector<int32_t>& v, size_t n) {
    if (v.size() != n) return false;
    for (int32_t s : v)
      if (!slot_ok(s)) return false;
    return true;
  };
  if (m.n_v < 0 || m.n_q < 0 || m.n_y < 0 || m.n_z < 0) return "negative sizes";
  if (m.v0.size() != static_cast<size_t>(m.n_v)) return "v0 is not of size n_v";
  const auto nq = static_cast<size_t>(m.n_q), ny = static_cast<size_t>(m.n_y),
             nz = static_cast<size_t>(m.n_z);
  if (!slots_ok(m.q_slot, nq) || !slots_ok(m.qd_slot, nq) || !slots_ok(m.qdd_slot, nq) ||
      !slots_ok(m.y_slot, ny) || !slots_ok(m.yd_slot, ny) || !slots_ok(m.z_slot, nz))
    return "slots of the unknowns out of range";
  if (!slot_ok(m.slot_time) || !slot_ok(m.slot_c_q) || !slot_ok(m.slot_c_qd) ||
      !slot_ok(m.slot_c_y))
    return "slots of time or the coefficients out of range";
  if (m.q.size() != nq || m.y.size() != ny || m.z.size() != nz) return "names of the unknowns";
  const auto neq = static_cast<size_t>(m.n_eq());
  if (m.eq_level.size() != neq || m.eq_source.size() != neq) return "equation lists";
  if (!slots_ok(m.parameter_slot, m.parameters.size())) return "parameter slots";
  if ((!m.parameter_derived.empty() && m.parameter_derived.size() != m.parameters.size()) ||
      (!m.parameter_type.empty() && m.parameter_type.size() != m.parameters.size()) ||
      (!m.output_type.empty() && m.output_type.size() != m.output_names.size()))
    return "parameter or output lists";
  if (!slots_ok(m.input_slot, m.inputs.size())) return "input slots";
  if (!m.when_first_branch.empty() || m.events.n_out != 0 || m.event_reinit.n_out != 0) {
    // offsets from 0, non-decreasing, ending at the next list's size
    auto offsets_ok = [](const std::vector<int32_t>& o, size_t n) {
      if (o.empty() || o.front() != 0 || static_cast<size_t>(o.back()) != n) return false;
      for (size_t i = 1; i < o.size(); ++i)
        if (o[i] < o[i - 1]) return false;
      return true;
    };
    const size_t nb = m.branch_source.size(), nr = m.reinit_slot.size();
    if (!offsets_ok(m.when_first_branch, nb) || !offsets_ok(m.branch_first_reinit, nr) ||
        m.branch_first_reinit.size() != nb + 1 || !slots_ok(m.reinit_slot, nr) ||
        m.reinit_scale.size() != nr || m.reinit_source.size() != nr || m.n_crossings < 0 ||
        m.n_switches < 0 || m.n_switches > m.n_crossings ||
        m.events.n_out != m.n_crossings + static_cast<int32_t>(nb) ||
        m.event_reinit.n_out != static_cast<int32_t>(nr) ||
        (!m.branch_initial.empty() && m.branch_initial.size() != nb) ||
        (!m.crossing_side_slot.empty() &&
         !slots_ok(m.crossing_side_slot, static_cast<size_t>(m.n_crossings - m.n_switches))))
      return "event tables";
  }
  if (!slots_ok(m.pre_slot, m.pre_value_slot.size()) ||
      !slots_ok(m.pre_value_slot, m.pre_slot.size()) ||
      (m.slot_initial != -1 && !slot_ok(m.slot_initial)) ||
      (m.slot_terminal != -1 && !slot_ok(m.slot_terminal)))
    return "slots of the discrete variables";
  if (m.rotation_charts.size() % 10 != 0 || !slots_ok(m.rotation_charts, m.rotation_charts.size()))
    return "slots of the rotation charts";
  for (EquationLevel l : m.eq_level)
    if (l > EquationLevel::Algebraic) return "an equation level out of range";
  for (EquationLevel l : m.z_level)
    if (l > EquationLevel::Algebraic) return "a multiplier level out of range";
  if (!m.z_auxiliary.empty() && m.z_auxiliary.size() != static_cast<size_t>(m.n_z))
    return "z_auxiliary is not of size n_z";
  for (EquationLevel l : m.z_auxiliary)
    if (l > EquationLevel::Algebraic) return "an auxiliary level out of range";
  for (EquationRole r : m.eq_role)
    if (r > EquationRole::UnitQuaternion) return "an equation role out of range";
  for (OutputRole r : m.output_role)
    if (r > OutputRole::ShapePose) return "an output role out of range";
  if (m.shape_frame_column.size() != m.shape_frames.size()) return "shape frame columns";
  for (int32_t c : m.shape_frame_column)
    if (c < 0 || static_cast<size_t>(c) + kPoseColumns > m.output_names.size())
      return "a shape frame column out of range";
  const auto n_frames = static_cast<int32_t>(m.shape_frames.size());
  for (const Shape& s : m.shapes)
    if (static_cast<uint8_t>(s.type) >= kShapeTypeCount || s.frame < -1 || s.frame >= n_frames ||
        s.frame_b < -1 || s.frame_b >= n_frames)
      return "a shape out of range";
  for (const OutputSource& o : m.output_source)
    if (o.kind > OutputSource::Kind::Explicit || o.alias_slot < -1 || o.alias_slot >= m.n_v)
      return "an output source out of range";
  if (m.output_names.size() != static_cast<size_t>(m.outputs.n_out)) return "output names";
  if (!m.output_interface.empty() && m.output_interface.size() != m.output_names.size())
    return "output interface flags";
  if (!m.output_discrete.empty() && m.output_discrete.size() != m.output_names.size())
    return "output discrete flags";
  std::string bad;
  for_each_kernel(m, [&](const char* name, const Kernel& k) {
    if (k.n_out < 0 && bad.empty()) bad = std::string("kernel ") + name;
  });
  if (!bad.empty()) return bad + " has a negative size";
  auto pattern_ok = [](const SparseKernel& k) {
    if (k.row.size() != k.col.size() || k.row.size() != static_cast<size_t>(k.values.n_out))
      return false;
    for (size_t i = 0; i < k.row.size(); ++i)
      if (k.row[i] < 0 || k.row[i] >= k.rows || k.col[i] < 0 || k.col[i] >= k.cols) return false;
    return true;
  };
  for (const SparseKernel* k :
       {&m.newton_matrix, &m.init_matrix, &m.mass_matrix, &m.jac_q, &m.jac_qd, &m.jac_y, &m.jac_z,
        &m.index2_matrix, &m.outputs_z, &m.constraint_G, &m.body_rows_u, &m.body_wrench_u,
        &m.sens_F_p, &m.sens_init, &m.sens_start, &m.sens_bindings, &m.sens_outputs})
    if (!pattern_ok(*k)) return "a sparsity pattern out of its matrix";
  return {};
}

template <class M, class F>
void visit_kernels(M& m, F&& f) {
  auto sparse = [&](const char* name, auto& k) { f(name, k.values); };
  f("residual", m.residual);
  sparse("newton_matrix", m.newton_matrix);
  f("init_residual", m.init_residual);
  sparse("init_matrix", m.init_matrix);
  f("outputs", m.outputs);
  sparse("outputs_z", m.outputs_z);
  f("constraint_g", m.constraint_g);
  f("constraint_gd", m.constraint_gd);
  f("constraint_gamma", m.constraint_gamma);
  sparse("constraint_G", m.constraint_G);
  f("body_rows", m.body_rows);
  f("body_wrench", m.body_wrench);
  sparse("body_rows_u", m.body_rows_u);
  sparse("body_wrench_u", m.body_wrench_u);
  f("inverse_balance", m.inverse_balance);
  sparse("mass_matrix", m.mass_matrix);
  sparse("jac_q", m.jac_q);
  sparse("jac_qd", m.jac_qd);
  sparse("jac_y", m.jac_y);
  sparse("jac_z", m.jac_z);
  f("index2_residual", m.index2_residual);
  sparse("index2_matrix", m.index2_matrix);
  f("initial_values", m.initial_values);
  f("parameter_bindings", m.parameter_bindings);
  sparse("sens_F_p", m.sens_F_p);
  sparse("sens_init", m.sens_init);
  sparse("sens_start", m.sens_start);
  sparse("sens_bindings", m.sens_bindings);
  sparse("sens_outputs", m.sens_outputs);
  f("events", m.events);
  f("event_reinit", m.event_reinit);
}

}  // namespace

void for_each_kernel(CompiledModel& m, const std::function<void(const char*, Kernel&)>& f) {
  visit_kernels(m, f);
}

void for_each_kernel(const CompiledModel& m,
                     const std::function<void(const char*, const Kernel&)>& f) {
  visit_kernels(m, f);
}

std::string write_model_image(const CompiledModel& m) {
  uint32_t version = kModelImageVersion;
  Writer count(/*counting=*/true);
  count.prim(version);
  transfer(count, const_cast<CompiledModel&>(m));
  Writer w;
  w.out.reserve(kMagicBytes + count.size);
  w.out.append(kMagic, kMagicBytes);
  w.prim(version);
  transfer(w, const_cast<CompiledModel&>(m));  // Writer only reads the fields
  return std::move(w.out);
}

std::string read_model_image(std::string_view image, CompiledModel& m) {
  if (image.size() < kMagicBytes || image.substr(0, kMagicBytes) != kMagic)
    return "not a model image";
  Reader r(image.substr(kMagicBytes));
  uint32_t version = 0;
  r.prim(version);
  if (!r.ok()) return "model image: " + r.error;
  if (version != kModelImageVersion)
    return "model image of format version " + std::to_string(version) + ", expected " +
           std::to_string(kModelImageVersion);
  m = CompiledModel{};
  transfer(r, m);
  if (!r.ok()) return "model image: " + r.error;
  if (r.left() != 0) return "model image: " + std::to_string(r.left()) + " bytes after its end";
  if (std::string e = check_consistency(m); !e.empty()) return "model image inconsistent: " + e;
  return {};
}

std::string bind_kernels(CompiledModel& m,
                         const std::function<KernelFn(const std::string& symbol)>& resolve) {
  std::string missing;
  for_each_kernel(m, [&](const char*, Kernel& k) {
    if (k.symbol.empty() || !missing.empty()) return;
    k.fn = resolve(k.symbol);
    if (k.fn == nullptr) missing = k.symbol;
  });
  return missing;
}

}  // namespace mbs::rt
