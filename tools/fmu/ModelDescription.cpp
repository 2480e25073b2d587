// modelDescription.xml for FMI 2.0 and 3.0 (ModelDescription.h).
#include "tools/fmu/ModelDescription.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>

namespace mbs::fmu {

namespace {

using rt::fmi::Causality;
using rt::fmi::Initial;
using rt::fmi::Variability;
using rt::fmi::Variable;

const char* causality(Causality c) {
  switch (c) {
    case Causality::Independent:
      return "independent";
    case Causality::Parameter:
      return "parameter";
    case Causality::CalculatedParameter:
      return "calculatedParameter";
    case Causality::Input:
      return "input";
    case Causality::Output:
      return "output";
    case Causality::Local:
      break;
  }
  return "local";
}

const char* variability(Variability v) {
  switch (v) {
    case Variability::Constant:
      return "constant";
    case Variability::Fixed:
      return "fixed";
    case Variability::Tunable:
      return "tunable";
    case Variability::Discrete:
      return "discrete";
    case Variability::Continuous:
      break;
  }
  return "continuous";
}

const char* initial(Initial i) {
  switch (i) {
    case Initial::Exact:
      return "exact";
    case Initial::Approx:
      return "approx";
    case Initial::Calculated:
      return "calculated";
    case Initial::None:
      break;
  }
  return "";
}

// xs:double
std::string number(double x) {
  if (std::isnan(x)) return "NaN";
  if (std::isinf(x)) return x > 0 ? "INF" : "-INF";
  return fmt::format("{:.17g}", x);
}

bool is_identifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

// the attributes shared by both versions: name, value reference, causality, variability,
// initial, description
std::string common_attributes(const Variable& v) {
  std::string a = fmt::format(R"(name="{}" valueReference="{}")", xml_escape(v.name), v.vr);
  if (!v.description.empty()) a += fmt::format(R"( description="{}")", xml_escape(v.description));
  a += fmt::format(R"( causality="{}" variability="{}")", causality(v.causality),
                   variability(v.variability));
  if (v.initial != Initial::None) a += fmt::format(R"( initial="{}")", initial(v.initial));
  return a;
}

}  // namespace

std::string xml_escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20)
          out += fmt::format("&#{};", static_cast<int>(static_cast<unsigned char>(c)));
        else
          out += c;
    }
  }
  return out;
}

std::string model_description(const rt::CompiledModel& m, const rt::fmi::VariableTable& table,
                              const DescriptionOptions& o, std::string* error) {
  auto fail = [&](std::string why) {
    if (error != nullptr) *error = std::move(why);
    return std::string();
  };
  if (!o.co_simulation && !o.model_exchange)
    return fail("neither co-simulation nor model exchange");
  if (!is_identifier(o.model_identifier))
    return fail("the model identifier '" + o.model_identifier + "' is not a C identifier");
  if (o.token.empty()) return fail("no instantiation token");
  if (o.model_exchange) {
    if (std::string why = rt::fmi::model_exchange_obstacle(m); !why.empty())
      return fail("no model exchange: " + why);
  }
  const bool v3 = o.version == FmiVersion::V3;
  const auto flag = [](bool b) { return b ? "true" : "false"; };
  std::string x = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  x += fmt::format(R"(<fmiModelDescription fmiVersion="{}" modelName="{}" {}="{}")",
                   v3 ? "3.0" : "2.0", xml_escape(m.name), v3 ? "instantiationToken" : "guid",
                   xml_escape(o.token));
  if (!o.description.empty()) x += fmt::format(R"( description="{}")", xml_escape(o.description));
  x += fmt::format(R"( generationTool="mbs {}")", MBS_VERSION);
  if (!o.generation_date.empty())
    x += fmt::format(R"( generationDateAndTime="{}")", xml_escape(o.generation_date));
  x += R"( variableNamingConvention="structured")";
  // model exchange hands the zero-crossing functions to the importer (FMI 3: EventIndicator)
  const size_t indicators = o.model_exchange ? table.event_indicators.size() : 0;
  if (!v3) x += fmt::format(R"( numberOfEventIndicators="{}")", indicators);
  x += ">\n";

  const std::string state_flags =
      v3 ? fmt::format(
               R"(canGetAndSetFMUState="{}" canSerializeFMUState="{}" providesDirectionalDerivatives="{}")",
               flag(o.can_get_set_state), flag(o.can_serialize_state),
               flag(o.directional_derivatives))
         : fmt::format(
               R"(canGetAndSetFMUstate="{}" canSerializeFMUstate="{}" providesDirectionalDerivative="{}")",
               flag(o.can_get_set_state), flag(o.can_serialize_state),
               flag(o.directional_derivatives));
  // FMI 3: completedIntegratorStep keeps the conditions the next event compares with, and asks
  // for the event that moves a rotation chart (FMI 2 always calls it:
  // completedIntegratorStepNotNeeded is false by default)
  const bool needs_completed = m.n_whens() > 0 || m.n_rotation_charts() > 0;
  if (o.model_exchange)
    x += fmt::format("  <ModelExchange modelIdentifier=\"{}\" {}{}/>\n", o.model_identifier,
                     v3 && needs_completed ? "needsCompletedIntegratorStep=\"true\" " : "",
                     state_flags);
  if (o.co_simulation)
    x += fmt::format(
        "  <CoSimulation modelIdentifier=\"{}\" canHandleVariableCommunicationStepSize=\"true\" "
        "{}/>\n",
        o.model_identifier, state_flags);

  std::set<std::string> units;
  for (const Variable& v : table.vars)
    if (!v.unit.empty()) units.insert(v.unit);
  if (!units.empty()) {
    x += "  <UnitDefinitions>\n";
    for (const std::string& u : units) x += fmt::format("    <Unit name=\"{}\"/>\n", xml_escape(u));
    x += "  </UnitDefinitions>\n";
  }
  x += "  <LogCategories>\n";
  for (const auto& [name, what] :
       {std::pair{"logStatusError", "errors: solver failures with time, step and equation"},
        std::pair{"logStatusWarning", "warnings"}, std::pair{"logEvents", "steps and restarts"}})
    x += fmt::format("    <Category name=\"{}\" description=\"{}\"/>\n", name, what);
  x += "  </LogCategories>\n";
  x += fmt::format(
      "  <DefaultExperiment startTime=\"{}\" stopTime=\"{}\" tolerance=\"{}\" stepSize=\"{}\"/>\n",
      number(o.start_time), number(o.stop_time), number(o.tolerance), number(o.step_size));

  x += "  <ModelVariables>\n";
  for (const Variable& v : table.vars) {
    if (v.type != rt::fmi::Type::Float64) {  // Integer (FMI 3 Int32) or Boolean
      const bool boolean = v.type == rt::fmi::Type::Boolean;
      std::string start;
      if (v.has_start)
        start = fmt::format(R"( start="{}")", boolean ? (v.start != 0.0 ? "true" : "false")
                                                      : fmt::format("{:.0f}", v.start));
      const char* element = boolean ? "Boolean" : v3 ? "Int32" : "Integer";
      if (v3)
        x += fmt::format("    <{} {}{}/>\n", element, common_attributes(v), start);
      else
        x += fmt::format("    <ScalarVariable {}>\n      <{}{}/>\n    </ScalarVariable>\n",
                         common_attributes(v), element, start);
      continue;
    }
    std::string real;  // the type's attributes
    if (v.has_start) real += fmt::format(R"( start="{}")", number(v.start));
    if (v.derivative_of >= 0)  // FMI 2: the 1-based index of the state; FMI 3: its reference
      real += fmt::format(R"( derivative="{}")",
                          v3 ? table.vars[static_cast<size_t>(v.derivative_of)].vr
                             : static_cast<uint32_t>(v.derivative_of) + 1);
    if (!v.unit.empty()) real += fmt::format(R"( unit="{}")", xml_escape(v.unit));
    if (v3)
      x += fmt::format("    <Float64 {}{}/>\n", common_attributes(v), real);
    else
      x += fmt::format("    <ScalarVariable {}>\n      <Real{}/>\n    </ScalarVariable>\n",
                       common_attributes(v), real);
  }
  x += "  </ModelVariables>\n";

  // ModelStructure. Dependencies are not listed: an unknown then depends on every known, which
  // is true of the derivatives (through the inverse of the mass matrix) and safe for the rest.
  std::vector<int32_t> initial_unknowns;
  for (int32_t i : table.outputs)
    if (table.vars[static_cast<size_t>(i)].initial != Initial::Exact) initial_unknowns.push_back(i);
  if (o.model_exchange) {
    // the derivatives that are calculated (der(q) is the state der(q), whose start is exact)
    for (int32_t i : table.derivatives)
      if (table.vars[static_cast<size_t>(i)].causality != Causality::Output &&
          table.vars[static_cast<size_t>(i)].initial != Initial::Exact)
        initial_unknowns.push_back(i);
  }
  // the calculated parameters (computed at initialization from the parameters)
  for (int32_t p : table.parameters)
    if (table.vars[static_cast<size_t>(p)].causality == Causality::CalculatedParameter)
      initial_unknowns.push_back(p);
  std::sort(initial_unknowns.begin(), initial_unknowns.end());
  initial_unknowns.erase(std::unique(initial_unknowns.begin(), initial_unknowns.end()),
                         initial_unknowns.end());
  const bool derivatives = o.model_exchange && !table.derivatives.empty();
  // Dependencies from the structure of the Jacobians (docs/fmu.md, "The model description"); a
  // list that cannot be computed is left out, which the standards read as "every known".
  using DepLists = std::vector<std::vector<int32_t>>;
  const DepLists derivative_deps = rt::fmi::derivative_dependencies(m, table);
  const DepLists output_deps_me =
      rt::fmi::output_dependencies(m, table, derivative_deps, /*model_exchange=*/true);
  const DepLists output_deps = o.model_exchange
                                   ? output_deps_me
                                   : rt::fmi::output_dependencies(m, table, derivative_deps, false);
  // at initialization the states' start values and the model's parameters are known as well
  DepLists initial_deps(initial_unknowns.size());
  std::vector<const std::vector<int32_t>*> deps_of(table.vars.size(), nullptr);  // by variable
  for (size_t d = 0; d < table.derivatives.size() && d < derivative_deps.size(); ++d)
    deps_of[static_cast<size_t>(table.derivatives[d])] = &derivative_deps[d];
  for (size_t d = 0; d < table.outputs.size() && d < output_deps_me.size(); ++d)
    if (deps_of[static_cast<size_t>(table.outputs[d])] == nullptr)
      deps_of[static_cast<size_t>(table.outputs[d])] = &output_deps_me[d];
  std::vector<int32_t> model_parameters;  // the independent ones, not the solver's
  const std::vector<int32_t> none;
  for (int32_t p : table.parameters) {
    const Variable& v = table.vars[static_cast<size_t>(p)];
    if (v.option < 0 && v.causality == Causality::Parameter) model_parameters.push_back(p);
    if (v.causality == Causality::CalculatedParameter) deps_of[static_cast<size_t>(p)] = &none;
  }
  bool initial_complete = true;
  for (size_t k = 0; k < initial_unknowns.size() && initial_complete; ++k) {
    const std::vector<int32_t>* from = deps_of[static_cast<size_t>(initial_unknowns[k])];
    if (from == nullptr) {
      initial_complete = false;
      break;
    }
    initial_deps[k] = *from;
    initial_deps[k].insert(initial_deps[k].end(), model_parameters.begin(), model_parameters.end());
    std::sort(initial_deps[k].begin(), initial_deps[k].end());
    initial_deps[k].erase(std::unique(initial_deps[k].begin(), initial_deps[k].end()),
                          initial_deps[k].end());
  }
  if (!initial_complete) initial_deps.clear();
  auto dependencies = [&](const DepLists& deps, size_t k, bool by_vr) {
    if (k >= deps.size()) return std::string();
    std::string d;
    for (int32_t i : deps[k])
      d += (d.empty() ? "" : " ") + std::to_string(by_vr ? table.vars[static_cast<size_t>(i)].vr
                                                         : static_cast<uint32_t>(i + 1));
    return fmt::format(" dependencies=\"{}\"", d);
  };
  x += "  <ModelStructure>\n";
  if (v3) {
    auto list = [&](const char* what, const std::vector<int32_t>& of, const DepLists& deps) {
      for (size_t k = 0; k < of.size(); ++k)
        x += fmt::format("    <{} valueReference=\"{}\"{}/>\n", what,
                         table.vars[static_cast<size_t>(of[k])].vr, dependencies(deps, k, true));
    };
    list("Output", table.outputs, output_deps);
    if (derivatives) list("ContinuousStateDerivative", table.derivatives, derivative_deps);
    list("InitialUnknown", initial_unknowns, initial_deps);
    if (indicators > 0) list("EventIndicator", table.event_indicators, {});
  } else {
    auto list = [&](const char* what, const std::vector<int32_t>& of, const DepLists& deps) {
      if (of.empty()) return;
      x += fmt::format("    <{}>\n", what);
      for (size_t k = 0; k < of.size(); ++k)
        x += fmt::format("      <Unknown index=\"{}\"{}/>\n", of[k] + 1,
                         dependencies(deps, k, false));
      x += fmt::format("    </{}>\n", what);
    };
    list("Outputs", table.outputs, output_deps);
    if (derivatives) list("Derivatives", table.derivatives, derivative_deps);
    list("InitialUnknowns", initial_unknowns, initial_deps);
  }
  x += "  </ModelStructure>\n</fmiModelDescription>\n";
  return x;
}

}  // namespace mbs::fmu
