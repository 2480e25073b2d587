#include "runtime/session/Instance.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "runtime/io/Suggest.h"

namespace mbs::rt {

namespace {

std::string did_you_mean(std::string_view name, const std::vector<std::string>& candidates) {
  const std::string near = meant_name(name, candidates);
  return near.empty() ? "" : "; did you mean '" + near + "'?";
}

std::vector<std::string> parameter_names(const CompiledModel& m) {
  std::vector<std::string> names;
  for (const auto& p : m.parameters) names.push_back(p.name);
  return names;
}

// Where a start value of `name` lives in v: slot -1 when it does not. An alias (v = der(x),
// a = -b) is the start value of what it is an alias of, times its scale.
struct StartTarget {
  int32_t slot = -1;
  double scale = 1.0;
};
StartTarget start_target(const CompiledModel& m, std::string_view name) {
  for (int32_t i = 0; i < m.n_q; ++i) {
    if (m.q[i].name == name) return {m.q_slot[i]};
    if ("der(" + m.q[i].name + ")" == name) return {m.qd_slot[i]};
  }
  for (int32_t i = 0; i < m.n_y; ++i)
    if (m.y[i].name == name) return {m.y_slot[i]};
  for (int32_t i = 0; i < m.n_z; ++i)
    if (m.z[i].name == name) return {m.z_slot[i]};
  for (size_t i = 0; i < m.output_names.size() && i < m.output_source.size(); ++i) {
    if (m.output_names[i] != name || m.output_source[i].alias_slot < 0) continue;
    const int32_t s = m.output_source[i].alias_slot;
    const auto is = [&](const std::vector<int32_t>& slots) {
      return std::find(slots.begin(), slots.end(), s) != slots.end();
    };
    if (is(m.q_slot) || is(m.qd_slot) || is(m.y_slot) || is(m.z_slot))
      return {s, m.output_source[i].alias_scale};
  }
  return {};
}
int32_t start_slot(const CompiledModel& m, std::string_view name) {
  return start_target(m, name).slot;
}

bool has_constraints(const CompiledModel& m) {
  return std::any_of(m.eq_level.begin(), m.eq_level.end(), [](EquationLevel l) {
    return l == EquationLevel::Position || l == EquationLevel::Velocity;
  });
}

}  // namespace

Instance::Instance(std::shared_ptr<const CompiledModel> model)
    : model_(std::move(model)), v_(model_->v0) {}

int32_t Instance::parameter_index(std::string_view name) const {
  const auto& ps = model_->parameters;
  for (size_t i = 0; i < ps.size(); ++i)
    if (ps[i].name == name) return static_cast<int32_t>(i);
  return -1;
}

bool Instance::has_start(std::string_view name) const {
  return start_slot(*model_, name) >= 0;
}

std::string Instance::why_compile_time(std::string_view name) const {
  const CompiledModel& m = *model_;
  if (int32_t p = parameter_index(name); p >= 0) {
    if (static_cast<size_t>(p) < m.parameter_compile_time.size())
      return m.parameter_compile_time[static_cast<size_t>(p)];
    return m.parameter_bindings.fn ? "" : "the model has no parameter_bindings kernel";
  }
  if (input_index(name) >= 0) return "";  // an input only has a slot
  if (start_slot(m, name) >= 0) {
    if (!m.start_compile_time.empty()) return m.start_compile_time;
    if (has_constraints(m))
      return "the model has constraints: its start values are checked (or assembled) by the "
             "compiler";
    return "";
  }
  return "'" + std::string(name) + "' is not a parameter, input or unknown of model '" + m.name +
         "'";
}

void Instance::set_parameter(std::string_view name, double value) {
  const int32_t p = parameter_index(name);
  if (p < 0) {
    std::string hint = start_slot(*model_, name) >= 0
                           ? "; it is a variable: set its start value instead"
                       : input_index(name) >= 0 ? "; it is an input: set it as an input"
                                                : did_you_mean(name, parameter_names(*model_));
    throw SetError(SetError::Kind::UnknownName, std::string(name),
                   fmt::format("model '{}' has no parameter '{}'{}", model_->name, name, hint));
  }
  if (std::string why = why_compile_time(name); !why.empty())
    throw SetError(SetError::Kind::NeedsCompile, std::string(name),
                   fmt::format("parameter '{}' is used by the compiler ({}): a new value needs a "
                               "new compile",
                               name, why));
  if (!std::isfinite(value))
    throw SetError(SetError::Kind::NotFinite, std::string(name),
                   fmt::format("parameter '{}' = {} is not a finite number", name, value));
  parameters_[std::string(name)] = value;
  dirty_ = true;
}

int32_t Instance::input_index(std::string_view name) const {
  const auto& in = model_->inputs;
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i].name == name) return static_cast<int32_t>(i);
  return -1;
}

void Instance::set_input(std::string_view name, double value) {
  if (input_index(name) < 0) {
    std::vector<std::string> names;
    for (const auto& u : model_->inputs) names.push_back(u.name);
    const char* hint = parameter_index(name) >= 0 ? "; it is a parameter: set it as a parameter"
                       : start_slot(*model_, name) >= 0 ? "; it is a variable: set its start value"
                                                        : nullptr;
    throw SetError(SetError::Kind::UnknownName, std::string(name),
                   fmt::format("model '{}' has no input '{}'{}", model_->name, name,
                               hint ? std::string(hint) : did_you_mean(name, names)));
  }
  if (!std::isfinite(value))
    throw SetError(SetError::Kind::NotFinite, std::string(name),
                   fmt::format("input '{}' = {} is not a finite number", name, value));
  inputs_[std::string(name)] = value;
  dirty_ = true;
}

void Instance::set_start(std::string_view name, double value) {
  const int32_t slot = start_slot(*model_, name);
  if (slot < 0) {
    std::vector<std::string> names;
    for (const auto& u : model_->q) names.push_back(u.name);
    for (const auto& u : model_->y) names.push_back(u.name);
    for (const auto& u : model_->z) names.push_back(u.name);
    const bool is_parameter = parameter_index(name) >= 0;
    if (input_index(name) >= 0)
      throw SetError(SetError::Kind::UnknownName, std::string(name),
                     fmt::format("model '{}' has no unknown '{}'; it is an input: set it as an "
                                 "input",
                                 model_->name, name));
    // a variable the compiler eliminated (an alias) has its start value in the compile
    const bool is_output = std::find(model_->output_names.begin(), model_->output_names.end(),
                                     name) != model_->output_names.end();
    if (is_output)
      throw SetError(SetError::Kind::NeedsCompile, std::string(name),
                     fmt::format("the start value of '{}' is used by the compiler (the variable "
                                 "was eliminated): a new value needs a new compile",
                                 name));
    throw SetError(SetError::Kind::UnknownName, std::string(name),
                   fmt::format("model '{}' has no unknown '{}'{}", model_->name, name,
                               is_parameter ? "; it is a parameter: set it as a parameter"
                                            : did_you_mean(name, names)));
  }
  if (std::string why = why_compile_time(name); !why.empty())
    throw SetError(SetError::Kind::NeedsCompile, std::string(name),
                   fmt::format("the start value of '{}' cannot change at run time ({}): a new "
                               "value needs a new compile",
                               name, why));
  if (!std::isfinite(value))
    throw SetError(SetError::Kind::NotFinite, std::string(name),
                   fmt::format("start value {} = {} is not a finite number", name, value));
  starts_[std::string(name)] = value;
  dirty_ = true;
}

void Instance::reset() {
  parameters_.clear();
  starts_.clear();
  inputs_.clear();
  v_ = model_->v0;
  dirty_ = false;
}

void Instance::update() {
  const CompiledModel& m = *model_;
  v_ = m.v0;
  const size_t np = m.parameters.size();
  std::vector<bool> set(np, false);
  for (const auto& [name, value] : parameters_) {
    const auto p = static_cast<size_t>(parameter_index(name));
    v_[static_cast<size_t>(m.parameter_slot[p])] = value;
    set[p] = true;
  }
  if (!parameters_.empty() && m.parameter_bindings.fn) {
    // Jacobi passes over the bindings: after pass k every parameter whose chain of bindings is
    // at most k long is exact
    scratch_.assign(np, 0.0);
    for (int32_t pass = 0; pass < m.parameter_binding_passes; ++pass) {
      m.parameter_bindings(v_.data(), scratch_.data());
      for (size_t p = 0; p < np; ++p)
        if (!set[p]) v_[static_cast<size_t>(m.parameter_slot[p])] = scratch_[p];
    }
  }
  for (size_t p = 0; p < np; ++p) {
    const double x = v_[static_cast<size_t>(m.parameter_slot[p])];
    const std::string& name = m.parameters[p].name;
    const bool derived = !set[p];
    if (!std::isfinite(x))
      throw SetError(SetError::Kind::NotFinite, name,
                     fmt::format("parameter '{}'{} is {}, not a finite number", name,
                                 derived ? " (from the values set)" : "", x));
    if (p < m.parameter_min.size() && x < m.parameter_min[p])
      throw SetError(SetError::Kind::OutOfRange, name,
                     fmt::format("parameter '{}' = {}{} violates min = {}", name, x,
                                 derived ? " (from the values set)" : "", m.parameter_min[p]));
    if (p < m.parameter_max.size() && x > m.parameter_max[p])
      throw SetError(SetError::Kind::OutOfRange, name,
                     fmt::format("parameter '{}' = {}{} violates max = {}", name, x,
                                 derived ? " (from the values set)" : "", m.parameter_max[p]));
  }
  for (const auto& [name, value] : inputs_)
    v_[static_cast<size_t>(m.input_slot[static_cast<size_t>(input_index(name))])] = value;
  if ((!parameters_.empty() || !inputs_.empty()) && m.initial_values.fn) {
    // start values [q | qd | y | z] that the model computes from parameters
    scratch_.assign(static_cast<size_t>(m.initial_values.n_out), 0.0);
    m.initial_values(v_.data(), scratch_.data());
    size_t k = 0;
    for (int32_t s : m.q_slot) v_[static_cast<size_t>(s)] = scratch_[k++];
    for (int32_t s : m.qd_slot) v_[static_cast<size_t>(s)] = scratch_[k++];
    for (int32_t s : m.y_slot) v_[static_cast<size_t>(s)] = scratch_[k++];
    for (int32_t s : m.z_slot) v_[static_cast<size_t>(s)] = scratch_[k++];
    for (size_t i = 0; i < k; ++i)
      if (!std::isfinite(scratch_[i]))
        throw SetError(SetError::Kind::NotFinite, "",
                       "a start value computed from the parameters and inputs set is not a "
                       "finite number");
  }
  for (const auto& [name, value] : starts_) {
    const StartTarget t = start_target(m, name);
    v_[static_cast<size_t>(t.slot)] = value / t.scale;
  }
  dirty_ = false;
}

const std::vector<double>& Instance::start_vector() {
  if (dirty_) update();
  return v_;
}

double Instance::parameter(std::string_view name) {
  const int32_t p = parameter_index(name);
  if (p < 0)
    throw SetError(SetError::Kind::UnknownName, std::string(name),
                   fmt::format("model '{}' has no parameter '{}'{}", model_->name, name,
                               did_you_mean(name, parameter_names(*model_))));
  return start_vector()[static_cast<size_t>(model_->parameter_slot[static_cast<size_t>(p)])];
}

SensitivityDirection Instance::sensitivity_direction(std::string_view name) {
  const CompiledModel& m = *model_;
  if (!m.has_sensitivities())
    throw SetError(
        SetError::Kind::NeedsCompile, std::string(name),
        "model '" + m.name + "' was compiled without the kernels of exact sensitivities");
  const size_t np = m.parameters.size();
  const auto nq = static_cast<size_t>(m.n_q), ny = static_cast<size_t>(m.n_y);
  SensitivityDirection d;
  d.dp.assign(np, 0.0);
  d.start.assign(2 * nq + ny, 0.0);
  if (input_index(name) >= 0)
    throw SetError(SetError::Kind::UnknownName, std::string(name),
                   "no exact sensitivity with respect to the input '" + std::string(name) +
                       "': the sensitivity kernels differentiate with respect to parameters; "
                       "make it a parameter");
  if (std::string why = why_compile_time(name); !why.empty())
    throw SetError(parameter_index(name) < 0 && start_slot(m, name) < 0
                       ? SetError::Kind::UnknownName
                       : SetError::Kind::NeedsCompile,
                   std::string(name),
                   "no exact sensitivity with respect to '" + std::string(name) + "': " + why);
  const std::vector<double>& v = start_vector();
  if (const int32_t p = parameter_index(name); p >= 0) {
    d.dp[static_cast<size_t>(p)] = 1.0;
    // derived parameters: dp_j = sum_i d binding_j / d p_i dp_i, for every parameter not set
    std::vector<bool> fixed(np, false);
    fixed[static_cast<size_t>(p)] = true;
    for (const auto& [n, x] : parameters_) fixed[static_cast<size_t>(parameter_index(n))] = true;
    std::vector<double> b(static_cast<size_t>(m.sens_bindings.nnz()));
    m.sens_bindings.values(v.data(), b.data());
    for (int32_t pass = 0; pass < m.parameter_binding_passes; ++pass) {
      std::vector<double> next(np, 0.0);
      for (int32_t e = 0; e < m.sens_bindings.nnz(); ++e)
        next[static_cast<size_t>(m.sens_bindings.row[e])] +=
            b[static_cast<size_t>(e)] * d.dp[static_cast<size_t>(m.sens_bindings.col[e])];
      for (size_t j = 0; j < np; ++j)
        if (!fixed[j]) d.dp[j] = next[j];
    }
    // start values computed from parameters ([q | qd | y | z] rows), except those set
    std::vector<double> s(static_cast<size_t>(m.sens_start.nnz()));
    m.sens_start.values(v.data(), s.data());
    std::vector<double> ds(2 * nq + ny + static_cast<size_t>(m.n_z), 0.0);
    for (int32_t e = 0; e < m.sens_start.nnz(); ++e)
      ds[static_cast<size_t>(m.sens_start.row[e])] +=
          s[static_cast<size_t>(e)] * d.dp[static_cast<size_t>(m.sens_start.col[e])];
    std::copy_n(ds.begin(), d.start.size(), d.start.begin());
    for (const auto& [n, x] : starts_) {
      const int32_t slot = start_target(m, n).slot;
      for (size_t i = 0; i < nq; ++i) {
        if (m.q_slot[i] == slot) d.start[i] = 0;
        if (m.qd_slot[i] == slot) d.start[nq + i] = 0;
      }
      for (size_t j = 0; j < ny; ++j)
        if (m.y_slot[j] == slot) d.start[2 * nq + j] = 0;
    }
    return d;
  }
  const StartTarget t = start_target(m, name);
  for (size_t i = 0; i < nq; ++i) {
    if (m.q_slot[i] == t.slot) d.start[i] = 1.0 / t.scale;
    if (m.qd_slot[i] == t.slot) d.start[nq + i] = 1.0 / t.scale;
  }
  for (size_t j = 0; j < ny; ++j)
    if (m.y_slot[j] == t.slot) d.start[2 * nq + j] = 1.0 / t.scale;
  if (std::all_of(d.start.begin(), d.start.end(), [](double x) { return x == 0.0; }))
    throw SetError(SetError::Kind::NeedsCompile, std::string(name),
                   "no exact sensitivity with respect to the start value of '" + std::string(name) +
                       "': it is an algebraic unknown (a guess)");
  return d;
}

}  // namespace mbs::rt
