// The FMU's variable table (Variables.h).
#include "runtime/fmi/Variables.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <set>
#include <unordered_map>

namespace mbs::rt::fmi {

bool is_fmu_solver_parameter(const OptionSpec& spec) {
  if (spec.type != OptionType::Real && spec.type != OptionType::Integer) return false;
  // not the run's length or output (the importer's experiment and communication points decide
  // them), nor the static solver's or the logging's
  for (std::string_view k : {"t_end", "output_every", "load_steps", "verbosity"})
    if (spec.key == k) return false;
  return true;
}

std::string fmu_variables(const CompiledModel& m, const std::vector<std::string>& outputs,
                          VariableTable& t, const SolverOptions* solver) {
  t = {};
  auto add = [&](Variable v) {
    v.vr = static_cast<uint32_t>(t.vars.size());
    t.vars.push_back(std::move(v));
    return static_cast<int32_t>(t.vars.size() - 1);
  };
  {
    Variable time;
    time.name = "time";
    time.causality = Causality::Independent;
    time.slot = m.slot_time;
    time.unit = "s";
    time.description = "simulation time";
    add(std::move(time));
  }
  std::unordered_map<std::string, int32_t> by_name;
  const std::set<std::string> wanted(outputs.begin(), outputs.end());
  std::set<std::string> found;
  for (size_t c = 0; c < m.output_names.size(); ++c) {
    Variable v;
    v.name = m.output_names[c];
    v.column = static_cast<int32_t>(c);
    if (c < m.output_unit.size()) v.unit = m.output_unit[c];
    if (c < m.output_description.size()) v.description = m.output_description[c];
    if (wanted.count(v.name)) {
      v.causality = Causality::Output;
      found.insert(v.name);
    }
    if (c < m.output_discrete.size() && m.output_discrete[c] != 0)
      v.variability = Variability::Discrete;
    if (c < m.output_type.size())
      v.type = static_cast<Type>(std::min<uint8_t>(m.output_type[c], 2));
    const std::string name = v.name;
    by_name[name] = add(std::move(v));
  }
  for (const std::string& name : wanted)
    if (!found.count(name)) return "'" + name + "' is not a variable of the model";
  // the inputs: set by the importer in their slots (their columns only read those)
  for (size_t i = 0; i < m.inputs.size(); ++i) {
    const std::string& name = m.inputs[i].name;
    int32_t index = -1;
    if (auto it = by_name.find(name); it != by_name.end()) {
      index = it->second;
    } else {
      Variable v;
      v.name = name;
      index = add(std::move(v));
      by_name[name] = index;
    }
    Variable& v = t.vars[static_cast<size_t>(index)];
    if (wanted.count(name)) return "the input '" + name + "' cannot be an output";
    v.causality = Causality::Input;
    v.slot = m.input_slot[i];
    v.column = -1;
    v.has_start = true;
    v.start = m.v0[static_cast<size_t>(v.slot)];
    t.inputs.push_back(index);
  }

  // the states [q | qd | y] and their derivatives
  auto state_of = [&](const std::string& name, int32_t slot) {
    if (auto it = by_name.find(name); it != by_name.end()) {
      t.vars[static_cast<size_t>(it->second)].slot = slot;  // a state is read from its slot
      t.vars[static_cast<size_t>(it->second)].column = -1;
      return it->second;
    }
    Variable v;
    v.name = name;
    v.slot = slot;
    const int32_t index = add(std::move(v));
    by_name[name] = index;
    return index;
  };
  std::vector<int32_t> q(static_cast<size_t>(m.n_q)), qd(q.size()), qdd(q.size()),
      y(static_cast<size_t>(m.n_y)), yd(y.size());
  for (size_t i = 0; i < q.size(); ++i) {
    const std::string& n = m.q[i].name;
    q[i] = state_of(n, m.q_slot[i]);
    qd[i] = state_of("der(" + n + ")", m.qd_slot[i]);
    qdd[i] = state_of("der(" + n + ",2)", m.qdd_slot[i]);
  }
  for (size_t j = 0; j < y.size(); ++j) {
    y[j] = state_of(m.y[j].name, m.y_slot[j]);
    yd[j] = state_of("der(" + m.y[j].name + ")", m.yd_slot[j]);
  }
  for (size_t i = 0; i < q.size(); ++i) {
    t.states.push_back(q[i]);
    t.derivatives.push_back(qd[i]);
  }
  for (size_t i = 0; i < q.size(); ++i) {
    t.states.push_back(qd[i]);
    t.derivatives.push_back(qdd[i]);
  }
  for (size_t j = 0; j < y.size(); ++j) {
    t.states.push_back(y[j]);
    t.derivatives.push_back(yd[j]);
  }
  for (size_t k = 0; k < t.states.size(); ++k) {
    Variable& s = t.vars[static_cast<size_t>(t.states[k])];
    Variable& d = t.vars[static_cast<size_t>(t.derivatives[k])];
    // a state starts from its start value; a derivative is calculated from the states
    s.initial = Initial::Exact;
    s.has_start = true;
    s.start = m.v0[static_cast<size_t>(s.slot)];
    d.derivative_of = t.states[k];
    if (d.causality != Causality::Output) d.initial = Initial::Calculated;
    if (d.unit.empty() && !s.unit.empty()) d.unit = s.unit + "/s";
  }
  // the other variables are calculated (an output or local without a start)
  for (Variable& v : t.vars)
    if (v.causality != Causality::Independent && v.causality != Causality::Input &&
        v.initial == Initial::None)
      v.initial = Initial::Calculated;

  for (size_t p = 0; p < m.parameters.size(); ++p) {
    Variable v;
    v.name = m.parameters[p].name;
    // docs/fmu.md, "Variables and value references": a parameter the compiler used as a number
    // is a constant of the FMU (a new value needs a new export: importers do not set a
    // constant); one computed from others a calculated parameter (importers do not set it
    // either: it follows the parameters it reads); the rest are tunable parameters
    const bool compile_time =
        p < m.parameter_compile_time.size() && !m.parameter_compile_time[p].empty();
    const bool derived = p < m.parameter_derived.size() && m.parameter_derived[p] != 0;
    if (compile_time) {
      v.causality = Causality::Local;
      v.variability = Variability::Constant;
      v.initial = Initial::Exact;
      v.has_start = true;
    } else if (derived) {
      v.causality = Causality::CalculatedParameter;
      v.variability = Variability::Tunable;
      v.initial = Initial::Calculated;
    } else {
      v.causality = Causality::Parameter;
      v.variability = Variability::Tunable;
      v.initial = Initial::Exact;
      v.has_start = true;
    }
    v.slot = m.parameter_slot[p];
    v.start = m.v0[static_cast<size_t>(v.slot)];
    if (p < m.parameter_type.size())
      v.type = static_cast<Type>(std::min<uint8_t>(m.parameter_type[p], 2));
    if (p < m.parameter_unit.size()) v.unit = m.parameter_unit[p];
    if (p < m.parameter_description.size()) v.description = m.parameter_description[p];
    if (by_name.count(v.name)) return "the parameter '" + v.name + "' is also a variable";
    const int32_t index = add(std::move(v));
    by_name[m.parameters[p].name] = index;
    t.parameters.push_back(index);
  }
  if (solver != nullptr) {
    const std::span<const OptionSpec> options = option_table();
    for (size_t k = 0; k < options.size(); ++k) {
      const OptionSpec& spec = options[k];
      if (!is_fmu_solver_parameter(spec)) continue;
      Variable v;
      v.name = "solver." + std::string(spec.key);
      v.causality = Causality::Parameter;
      v.variability = Variability::Fixed;
      v.initial = Initial::Exact;
      v.has_start = true;
      v.option = static_cast<int32_t>(k);
      v.start = option_number(*solver, spec);
      if (spec.type == OptionType::Integer) v.type = Type::Int32;
      v.unit = std::string(spec.unit);
      v.description = "solver option " + std::string(spec.flag) + ": " + std::string(spec.help);
      if (by_name.count(v.name))
        return "the FMU's solver parameter '" + v.name + "' has the name of a model variable";
      const int32_t index = add(std::move(v));
      t.parameters.push_back(index);
    }
  }
  for (int32_t k = 0; k < m.n_crossings; ++k) {
    Variable v;
    v.name = fmt::format("_eventIndicator[{}]", k + 1);
    v.initial = Initial::Calculated;
    v.indicator = k;
    v.description =
        k >= m.n_crossings - m.n_switches
            ? "zero-crossing function of a switch (an if-expression, abs, sign, min or max)"
            : "zero-crossing function of a relation in a when-condition";
    if (by_name.count(v.name))
      return "the FMU's event indicator '" + v.name + "' has the name of a model variable";
    t.event_indicators.push_back(add(std::move(v)));
  }
  for (size_t i = 0; i < t.vars.size(); ++i) {
    // only Real variables change continuously (an Integer or Boolean one changes at events)
    Variable& v = t.vars[i];
    if (v.type != Type::Float64 && v.variability == Variability::Continuous)
      v.variability = Variability::Discrete;
    if (v.causality == Causality::Output) t.outputs.push_back(static_cast<int32_t>(i));
  }
  return {};
}

namespace {

// A maximum matching of rows to columns (augmenting paths); match[row] = column or -1.
std::vector<int32_t> match_rows(const std::vector<std::vector<int32_t>>& cols_of_row, int32_t n) {
  std::vector<int32_t> row_of(static_cast<size_t>(n), -1), match(cols_of_row.size(), -1);
  std::vector<int32_t> seen(static_cast<size_t>(n), -1);
  for (size_t r0 = 0; r0 < cols_of_row.size(); ++r0) {
    // iterative depth-first search for an augmenting path from row r0
    std::vector<std::pair<int32_t, size_t>> stack = {{static_cast<int32_t>(r0), 0}};
    std::vector<int32_t> path_cols;
    bool found = false;
    while (!stack.empty() && !found) {
      auto& [r, next] = stack.back();
      const auto& cols = cols_of_row[static_cast<size_t>(r)];
      if (next >= cols.size()) {
        stack.pop_back();
        if (!path_cols.empty()) path_cols.pop_back();
        continue;
      }
      const int32_t c = cols[next++];
      if (seen[static_cast<size_t>(c)] == static_cast<int32_t>(r0)) continue;
      seen[static_cast<size_t>(c)] = static_cast<int32_t>(r0);
      path_cols.push_back(c);
      if (row_of[static_cast<size_t>(c)] < 0) {
        found = true;
      } else {
        stack.push_back({row_of[static_cast<size_t>(c)], 0});
      }
    }
    if (!found) continue;
    // the stack holds the rows of the path, path_cols their new columns
    for (size_t k = 0; k < stack.size(); ++k) {
      const int32_t r = stack[k].first, c = path_cols[k];
      match[static_cast<size_t>(r)] = c;
      row_of[static_cast<size_t>(c)] = r;
    }
  }
  return match;
}

}  // namespace

std::vector<std::vector<int32_t>> derivative_dependencies(const CompiledModel& m,
                                                          const VariableTable& t,
                                                          size_t max_states) {
  const auto nq = static_cast<size_t>(m.n_q), ny = static_cast<size_t>(m.n_y);
  const size_t nx = nq + ny, n_states = 2 * nq + ny;
  if (m.n_z != 0 || n_states == 0 || n_states > max_states || t.states.size() != n_states ||
      t.derivatives.size() != n_states)
    return {};
  const auto n_eq = static_cast<size_t>(m.n_eq());
  // rows of A (unknowns [qdd | yd]) and of B (states [q | qd | y]) by equation
  std::vector<std::vector<int32_t>> a_cols(n_eq), rows_of_unknown(nx), rows_of_state(n_states);
  const SparseKernel& A = m.mass_matrix;
  for (int32_t k = 0; k < A.nnz(); ++k) {
    a_cols[static_cast<size_t>(A.row[k])].push_back(A.col[k]);
    rows_of_unknown[static_cast<size_t>(A.col[k])].push_back(A.row[k]);
  }
  auto add_block = [&](const SparseKernel& J, size_t offset) {
    for (int32_t k = 0; k < J.nnz(); ++k)
      rows_of_state[offset + static_cast<size_t>(J.col[k])].push_back(J.row[k]);
  };
  add_block(m.jac_q, 0);
  add_block(m.jac_qd, nq);
  add_block(m.jac_y, 2 * nq);
  const std::vector<int32_t> match = match_rows(a_cols, static_cast<int32_t>(nx));
  if (std::any_of(match.begin(), match.end(), [](int32_t c) { return c < 0; })) return {};
  // affected[x] for each state: the unknowns reached from the rows the state enters
  std::vector<std::vector<int32_t>> deps(n_states);
  std::vector<int32_t> row_seen(n_eq, -1), unknown_seen(nx, -1), queue;
  for (size_t s = 0; s < n_states; ++s) {
    queue.clear();
    const auto mark = static_cast<int32_t>(s);
    for (int32_t r : rows_of_state[s])
      if (row_seen[static_cast<size_t>(r)] != mark) {
        row_seen[static_cast<size_t>(r)] = mark;
        queue.push_back(r);
      }
    for (size_t head = 0; head < queue.size(); ++head) {
      const int32_t x = match[static_cast<size_t>(queue[head])];
      if (unknown_seen[static_cast<size_t>(x)] == mark) continue;
      unknown_seen[static_cast<size_t>(x)] = mark;
      deps[nq + static_cast<size_t>(x)].push_back(t.states[s]);
      for (int32_t r : rows_of_unknown[static_cast<size_t>(x)])
        if (row_seen[static_cast<size_t>(r)] != mark) {
          row_seen[static_cast<size_t>(r)] = mark;
          queue.push_back(r);
        }
    }
  }
  // der(q) is the state der(q); the solved derivatives also depend on every input
  for (size_t i = 0; i < nq; ++i) deps[i] = {t.states[nq + i]};
  for (size_t k = nq; k < n_states; ++k) {
    deps[k].insert(deps[k].end(), t.inputs.begin(), t.inputs.end());
    std::sort(deps[k].begin(), deps[k].end());
    deps[k].erase(std::unique(deps[k].begin(), deps[k].end()), deps[k].end());
  }
  return deps;
}

std::vector<std::vector<int32_t>> output_dependencies(
    const CompiledModel& m, const VariableTable& t,
    const std::vector<std::vector<int32_t>>& derivatives, bool model_exchange) {
  std::vector<std::vector<int32_t>> deps(t.outputs.size());
  if (!model_exchange) {  // co-simulation: the outputs at a communication point and the inputs
    if (!m.has_sensitivities()) return {};
    for (auto& d : deps) d = t.inputs;
    return deps;
  }
  const auto nq = static_cast<size_t>(m.n_q), ny = static_cast<size_t>(m.n_y);
  if (!m.has_sensitivities() || derivatives.size() != 2 * nq + ny || m.n_z != 0) return {};
  // column of sens_outputs -> what it is: [q | qd | qdd | y | yd | z | p]
  std::vector<std::vector<int32_t>> of_output(m.output_names.size());
  const SparseKernel& S = m.sens_outputs;
  for (int32_t k = 0; k < S.nnz(); ++k) {
    auto& into = of_output[static_cast<size_t>(S.row[k])];
    const auto c = static_cast<size_t>(S.col[k]);
    if (c < 2 * nq) {  // q, qd: states
      into.push_back(t.states[c]);
    } else if (c < 3 * nq) {  // qdd = der(qd): that derivative's dependencies
      const auto& d = derivatives[nq + (c - 2 * nq)];
      into.insert(into.end(), d.begin(), d.end());
    } else if (c < 3 * nq + ny) {  // y
      into.push_back(t.states[2 * nq + (c - 3 * nq)]);
    } else if (c < 3 * nq + 2 * ny) {  // yd
      const auto& d = derivatives[2 * nq + (c - 3 * nq - ny)];
      into.insert(into.end(), d.begin(), d.end());
    }  // z: none in model exchange; parameters are no knowns of continuous time
  }
  for (size_t k = 0; k < t.outputs.size(); ++k) {
    const Variable& out = t.vars[static_cast<size_t>(t.outputs[k])];
    std::vector<int32_t>& d = deps[k];
    if (out.column >= 0) {
      d = of_output[static_cast<size_t>(out.column)];
    } else if (out.slot >= 0) {  // an output that is a state (read from its slot): itself
      d = {t.outputs[k]};
      for (size_t s = 0; s < t.derivatives.size(); ++s)  // or a state derivative
        if (t.derivatives[s] == t.outputs[k] && s >= nq) d = derivatives[s];
    }
    d.insert(d.end(), t.inputs.begin(), t.inputs.end());
    std::sort(d.begin(), d.end());
    d.erase(std::unique(d.begin(), d.end()), d.end());
  }
  return deps;
}

std::vector<std::string> declared_outputs(const CompiledModel& m) {
  std::vector<std::string> names;
  for (size_t c = 0; c < m.output_interface.size() && c < m.output_names.size(); ++c)
    if (m.output_interface[c] != 0) names.push_back(m.output_names[c]);
  return names;
}

std::vector<std::string> default_outputs(const CompiledModel& m) {
  std::vector<std::string> names = declared_outputs(m);
  if (!names.empty()) return names;
  const std::set<std::string> columns(m.output_names.begin(), m.output_names.end());
  std::set<std::string> inputs;
  for (const auto& u : m.inputs) inputs.insert(u.name);
  auto add = [&](const std::string& name) {
    if (columns.count(name) && !inputs.count(name)) names.push_back(name);
  };
  for (const auto& q : m.q) add(q.name);
  for (const auto& y : m.y) add(y.name);
  return names;
}

std::string model_exchange_obstacle(const CompiledModel& m) {
  return constraints_obstacle(m);
}

std::string constraints_obstacle(const CompiledModel& m) {
  if (m.n_z == 0) return {};
  for (int32_t i = 0; i < m.n_eq(); ++i) {
    const EquationLevel level = m.eq_level[static_cast<size_t>(i)];
    if (level != EquationLevel::Position && level != EquationLevel::Velocity) continue;
    const SourceRef& at = m.eq_source[static_cast<size_t>(i)];
    return "the model keeps constraints and algebraic unknowns (" + std::to_string(m.n_z) +
           ") after the compiler's eliminations (the first constraint at " + at.file + ":" +
           std::to_string(at.line) + ": " + at.text +
           "); model exchange needs an ODE, so export it for co-simulation (its solver handles "
           "the constraints)";
  }
  return "the model keeps algebraic unknowns (" + std::to_string(m.n_z) +
         ") after the compiler's eliminations (e.g. '" + m.z[0].name +
         "'); model exchange needs an ODE, so export it for co-simulation";
}

}  // namespace mbs::rt::fmi
