// modelDescription.xml (tools/fmu/ModelDescription.h) from the variable table
// (runtime/fmi/Variables.h): every document validates against the official FMI 2.0 and 3.0
// schemas (tests/fmi/schema, xmllint), for co-simulation, model exchange and both; and what the
// schemas cannot check is checked here: value references and names unique, time first and
// independent, every derivative points at a state and every state has one, the outputs listed
// are the output variables, start values are the model's, and a model with constraints is
// refused for model exchange with a message naming the constraint.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/driver/Compile.h"
#include "runtime/fmi/Variables.h"
#include "tools/fmu/ModelDescription.h"

namespace mbs {
namespace {

namespace fs = std::filesystem;
using rt::fmi::Causality;
using rt::fmi::VariableTable;

std::shared_ptr<const rt::CompiledModel> compiled(const std::string& rel,
                                                  std::map<std::string, double> set = {}) {
  CompileOptions o;
  o.file = std::string(MBS_SOURCE_DIR) + "/" + rel;
  o.overrides = std::move(set);
  std::ostringstream emit, diag;
  CompileResult r = compile(o, emit, diag);
  EXPECT_TRUE(r.ok) << diag.str();
  return r.model;
}

// xmllint's verdict on `xml` against the schema of `version`: "" when valid, else its output
std::string validate(const std::string& xml, fmu::FmiVersion version) {
  const fs::path dir = fs::path(testing::TempDir()) / ("mbs_fmu_md_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path file = dir / "modelDescription.xml", out = dir / "xmllint.txt";
  std::ofstream(file) << xml;
  const std::string schema = std::string(MBS_SOURCE_DIR) + "/tests/fmi/schema/" +
                             (version == fmu::FmiVersion::V2 ? "fmi2/fmi2ModelDescription.xsd"
                                                             : "fmi3/fmi3ModelDescription.xsd");
  const std::string cmd = "xmllint --noout --schema '" + schema + "' '" + file.string() + "' >'" +
                          out.string() + "' 2>&1";
  const int rc = std::system(cmd.c_str());
  std::ifstream in(out);
  std::stringstream ss;
  ss << in.rdbuf();
  fs::remove_all(dir);
  return rc == 0 ? std::string() : "xmllint: " + ss.str() + "\n" + xml;
}

// The text of the variable `name` in a description: its element with the type's (FMI 2).
std::string element_of(const std::string& xml, const std::string& name) {
  const size_t at = xml.find("name=\"" + name + "\"");
  if (at == std::string::npos) return {};
  const size_t open = xml.rfind('<', at);
  const size_t end = xml.rfind("<ScalarVariable", at) == open ? xml.find("</ScalarVariable>", at)
                                                              : xml.find("/>", at);
  return xml.substr(open, end - open);
}

// Integer and Boolean parameters and discrete variables.
const char* const kTypesSource = R"(model Types
  parameter Integer m = 2;
  parameter Boolean on = true;
  Real x(start = 1, fixed = true);
  Integer n(start = 0);
  Boolean low(start = false);
equation
  der(x) = if on then -m * x else 0;
  when x < 0.5 then
    n = pre(n) + 1;
    low = true;
  end when;
end Types;
)";

void check_table(const rt::CompiledModel& m, const VariableTable& t) {
  ASSERT_FALSE(t.vars.empty());
  EXPECT_EQ(t.vars[0].name, "time");
  EXPECT_EQ(t.vars[0].causality, Causality::Independent);
  std::set<std::string> names;
  for (size_t i = 0; i < t.vars.size(); ++i) {
    EXPECT_EQ(t.vars[i].vr, i);
    EXPECT_TRUE(names.insert(t.vars[i].name).second) << t.vars[i].name;
    EXPECT_EQ((t.vars[i].slot >= 0) + (t.vars[i].column >= 0) + (t.vars[i].indicator >= 0), 1)
        << t.vars[i].name;
  }
  // one event indicator per zero-crossing function, after everything else
  ASSERT_EQ(t.event_indicators.size(), static_cast<size_t>(m.n_crossings));
  for (size_t k = 0; k < t.event_indicators.size(); ++k) {
    const auto& v = t.vars[static_cast<size_t>(t.event_indicators[k])];
    EXPECT_EQ(v.indicator, static_cast<int32_t>(k));
    EXPECT_EQ(v.vr, t.vars.size() - t.event_indicators.size() + k);
  }
  // [q | qd | y] with derivatives [qd | qdd | yd], by slot
  ASSERT_EQ(t.states.size(), static_cast<size_t>(2 * m.n_q + m.n_y));
  ASSERT_EQ(t.derivatives.size(), t.states.size());
  for (size_t k = 0; k < t.states.size(); ++k) {
    const auto& s = t.vars[static_cast<size_t>(t.states[k])];
    const auto& d = t.vars[static_cast<size_t>(t.derivatives[k])];
    EXPECT_EQ(d.derivative_of, t.states[k]);
    const size_t nq = static_cast<size_t>(m.n_q);
    if (k < nq) {
      EXPECT_EQ(s.slot, m.q_slot[k]);
      EXPECT_EQ(d.slot, m.qd_slot[k]);
    } else if (k < 2 * nq) {
      EXPECT_EQ(s.slot, m.qd_slot[k - nq]);
      EXPECT_EQ(d.slot, m.qdd_slot[k - nq]);
    } else {
      EXPECT_EQ(s.slot, m.y_slot[k - 2 * nq]);
      EXPECT_EQ(d.slot, m.yd_slot[k - 2 * nq]);
    }
    EXPECT_TRUE(s.has_start);
    EXPECT_EQ(s.start, m.v0[static_cast<size_t>(s.slot)]);
  }
  ASSERT_EQ(t.parameters.size(), m.parameters.size());
  for (size_t p = 0; p < m.parameters.size(); ++p) {
    const auto& v = t.vars[static_cast<size_t>(t.parameters[p])];
    EXPECT_EQ(v.name, m.parameters[p].name);
    EXPECT_EQ(v.start, m.v0[static_cast<size_t>(m.parameter_slot[p])]);
  }
}

struct Case {
  const char* file;
  std::vector<std::string> outputs;
  bool model_exchange;
};

TEST(FmuModelDescription, ValidatesAgainstTheSchemasForEveryTypeAndVersion) {
  ASSERT_EQ(std::system("xmllint --version >/dev/null 2>&1"), 0) << "xmllint (libxml2-utils)";
  const std::vector<Case> cases = {
      {"examples/pendulum.mbs", {}, false},  // Cartesian: a constraint and its multiplier
      {"examples/mechanics/pendulum.mbs", {}, true},
      {"examples/van_der_pol.mbs", {}, true},
      {"examples/mass_spring_damper.mbs", {}, true},
      {"examples/mechanics/chain.mbs", {}, true},
      {"examples/mechanics/slider_crank.mbs", {}, false},
      {"examples/mechanics/four_bar.mbs", {}, false},
      {"examples/bouncing_ball.mbs", {}, true},  // events: an event indicator
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.file);
    auto m = compiled(c.file);
    ASSERT_TRUE(m);
    // the first two variables of the model as outputs
    std::vector<std::string> outputs(
        m->output_names.begin(),
        m->output_names.begin() + std::min<size_t>(2, m->output_names.size()));
    VariableTable t;
    ASSERT_EQ(rt::fmi::fmu_variables(*m, outputs, t), "");
    check_table(*m, t);
    ASSERT_EQ(t.outputs.size(), outputs.size());
    for (size_t i = 0; i < outputs.size(); ++i)
      EXPECT_EQ(t.vars[static_cast<size_t>(t.outputs[i])].name, outputs[i]);
    EXPECT_EQ(rt::fmi::model_exchange_obstacle(*m).empty(), c.model_exchange)
        << rt::fmi::model_exchange_obstacle(*m);
    for (fmu::FmiVersion v : {fmu::FmiVersion::V2, fmu::FmiVersion::V3}) {
      for (int type = 0; type < 3; ++type) {  // cs, me, both
        SCOPED_TRACE(std::string(v == fmu::FmiVersion::V2 ? "FMI 2" : "FMI 3") + " type " +
                     std::to_string(type));
        fmu::DescriptionOptions o;
        o.version = v;
        o.co_simulation = type != 1;
        o.model_exchange = type != 0;
        o.model_identifier = "model_1";
        o.token = "{8c4e810f-3df3-4a00-8276-176fa3c9f000}";
        o.description = "a test <of> \"escaping\" & more";
        o.generation_date = "2026-12-02T18:30:00Z";
        std::string error;
        const std::string xml = fmu::model_description(*m, t, o, &error);
        if (o.model_exchange && !c.model_exchange) {
          EXPECT_EQ(xml, "");
          EXPECT_NE(error.find("no model exchange: "), std::string::npos) << error;
          EXPECT_NE(error.find("co-simulation"), std::string::npos) << error;
          continue;
        }
        ASSERT_NE(xml, "") << error;
        EXPECT_EQ(validate(xml, v), "");
        // model exchange declares the event indicators, co-simulation none
        const size_t indicators = o.model_exchange ? t.event_indicators.size() : 0;
        if (v == fmu::FmiVersion::V2) {
          EXPECT_NE(xml.find("numberOfEventIndicators=\"" + std::to_string(indicators) + "\""),
                    std::string::npos);
        } else {
          size_t listed = 0;
          for (size_t at = xml.find("<EventIndicator "); at != std::string::npos;
               at = xml.find("<EventIndicator ", at + 1))
            ++listed;
          EXPECT_EQ(listed, indicators);
        }
        // the derivative attribute names the state: its index (FMI 2) or reference (FMI 3)
        if (o.model_exchange && !t.derivatives.empty()) {
          const auto& d = t.vars[static_cast<size_t>(t.derivatives[0])];
          const std::string want =
              "derivative=\"" + std::to_string(t.states[0] + (v == fmu::FmiVersion::V3 ? 0 : 1));
          EXPECT_NE(xml.find(want), std::string::npos) << d.name;
        }
      }
    }
  }
}

TEST(FmuModelDescription, TheModelsOwnOutputsAreTheFmusOutputs) {
  // `output` in the model itself is an FMU output; in a component it is an ordinary variable
  CompileOptions o;
  o.file = "outputs.mbs";
  o.cache_dir = "off";
  o.source =
      "block Lag\n  input Real u;\n  output Real y(start = 0);\n  parameter Real T = 0.5;\n"
      "equation\n  T * der(y) = u - y;\nend Lag;\n"
      "model Outputs\n  Lag lag(u = 1);\n  output Real twice \"twice the lag's output\";\n"
      "  output Real e[2];\nequation\n  twice = 2 * lag.y;\n  e = {lag.y, -lag.y};\n"
      "end Outputs;\n";
  std::ostringstream emit, diag;
  CompileResult r = compile(o, emit, diag);
  ASSERT_TRUE(r.ok) << diag.str();
  const std::vector<std::string> declared = rt::fmi::declared_outputs(*r.model);
  EXPECT_EQ(declared, (std::vector<std::string>{"twice", "e[1]", "e[2]"}));
  VariableTable t;
  ASSERT_EQ(rt::fmi::fmu_variables(*r.model, declared, t), "");
  ASSERT_EQ(t.outputs.size(), 3u);
  EXPECT_EQ(t.vars[static_cast<size_t>(t.outputs[0])].description, "twice the lag's output");
  for (const auto& v : t.vars)
    if (v.name == "lag.y") {
      EXPECT_EQ(v.causality, Causality::Local);
    }
  fmu::DescriptionOptions d;
  d.model_identifier = "Outputs";
  d.token = "{0}";
  for (fmu::FmiVersion v : {fmu::FmiVersion::V2, fmu::FmiVersion::V3}) {
    d.version = v;
    d.model_exchange = true;
    std::string error;
    const std::string xml = fmu::model_description(*r.model, t, d, &error);
    ASSERT_NE(xml, "") << error;
    EXPECT_EQ(validate(xml, v), "");
    EXPECT_NE(xml.find("name=\"twice\""), std::string::npos);
  }
}

// A model that declares no outputs: its FMU's outputs are its states' positions (the second-order
// x, the first-order z; not der(x)), in both versions valid and listed as outputs.
TEST(FmuModelDescription, WithoutDeclaredOutputsTheStatesPositionsAreTheOutputs) {
  CompileOptions o;
  o.file = "osc.mbs";
  o.cache_dir = "off";
  o.source =
      "model Osc\n  parameter Real k = 4;\n  Real x(start = 1);\n  Real z(start = 1);\n"
      "  Real e;\nequation\n  der(der(x)) = -k*x;\n  der(z) = -z;\n  e = x*x + der(x)*der(x)/k;\n"
      "end Osc;\n";
  std::ostringstream emit, diag;
  CompileResult r = compile(o, emit, diag);
  ASSERT_TRUE(r.ok) << diag.str();
  EXPECT_TRUE(rt::fmi::declared_outputs(*r.model).empty());
  const std::vector<std::string> outputs = rt::fmi::default_outputs(*r.model);
  EXPECT_EQ(outputs, (std::vector<std::string>{"x", "z"}));
  VariableTable t;
  ASSERT_EQ(rt::fmi::fmu_variables(*r.model, outputs, t), "");
  ASSERT_EQ(t.outputs.size(), 2u);
  fmu::DescriptionOptions d;
  d.model_identifier = "Osc";
  d.token = "{0}";
  d.model_exchange = true;
  for (fmu::FmiVersion v : {fmu::FmiVersion::V2, fmu::FmiVersion::V3}) {
    d.version = v;
    std::string error;
    const std::string xml = fmu::model_description(*r.model, t, d, &error);
    ASSERT_NE(xml, "") << error;
    EXPECT_EQ(validate(xml, v), "");
    EXPECT_NE(element_of(xml, "x").find("causality=\"output\""), std::string::npos) << xml;
    EXPECT_NE(element_of(xml, "z").find("causality=\"output\""), std::string::npos) << xml;
  }
  // a declared output is the only one
  o.source =
      "model One\n  Real x(start = 1);\n  output Real y;\nequation\n  der(x) = -x;\n"
      "  y = 2 * x;\nend One;\n";
  CompileResult one = compile(o, emit, diag);
  ASSERT_TRUE(one.ok) << diag.str();
  EXPECT_EQ(rt::fmi::default_outputs(*one.model), (std::vector<std::string>{"y"}));
}

TEST(FmuModelDescription, TheModelsOwnInputsAreTheFmusInputs) {
  // `input` in the model itself: causality input, set and read through its slot
  CompileOptions o;
  o.file = "inputs.mbs";
  o.cache_dir = "off";
  o.source =
      "model Inputs\n  input Real u(start = 1, unit = \"N\") \"applied force\";\n"
      "  output Real y;\n  Real x(start = 0);\nequation\n  der(x) = -x + u;\n  y = 2 * x;\n"
      "end Inputs;\n";
  std::ostringstream emit, diag;
  CompileResult r = compile(o, emit, diag);
  ASSERT_TRUE(r.ok) << diag.str();
  const rt::CompiledModel& m = *r.model;
  ASSERT_EQ(m.inputs.size(), 1u);
  VariableTable t;
  ASSERT_EQ(rt::fmi::fmu_variables(m, rt::fmi::declared_outputs(m), t), "");
  ASSERT_EQ(t.inputs.size(), 1u);
  const rt::fmi::Variable& u = t.vars[static_cast<size_t>(t.inputs[0])];
  EXPECT_EQ(u.name, "u");
  EXPECT_EQ(u.causality, Causality::Input);
  EXPECT_EQ(u.slot, m.input_slot[0]);
  EXPECT_TRUE(u.has_start);
  EXPECT_EQ(u.start, 1.0);
  EXPECT_EQ(u.unit, "N");
  EXPECT_EQ(u.description, "applied force");
  fmu::DescriptionOptions d;
  d.model_identifier = "Inputs";
  d.token = "{0}";
  for (fmu::FmiVersion v : {fmu::FmiVersion::V2, fmu::FmiVersion::V3}) {
    d.version = v;
    d.model_exchange = true;
    std::string error;
    const std::string xml = fmu::model_description(m, t, d, &error);
    ASSERT_NE(xml, "") << error;
    EXPECT_EQ(validate(xml, v), "");
    EXPECT_NE(xml.find("causality=\"input\""), std::string::npos) << xml;
  }
}

// docs/fmu.md, "Variables and value references": a parameter the compiler used as a number (N
// sizes an array) is a constant of the FMU with its value as start; one computed from others
// (omega = sqrt(k/m)) a calculated parameter without a start, an initial unknown; the others
// parameters an importer sets. Importers set neither of the first two.
TEST(FmuModelDescription, FoldedParametersAreConstantsAndDerivedOnesCalculatedParameters) {
  CompileOptions o;
  o.file = "folded.mbs";
  o.cache_dir = "off";
  o.source =
      "model Folded\n  parameter Integer N = 3;\n  parameter Real k = 4, m = 1;\n"
      "  parameter Real omega = sqrt(k / m);\n  Real x[N](each start = 1, each fixed = true);\n"
      "equation\n  for i in 1:N loop\n    der(x[i]) = -omega * x[i];\n  end for;\nend Folded;\n";
  std::ostringstream emit, diag;
  CompileResult r = compile(o, emit, diag);
  ASSERT_TRUE(r.ok) << diag.str();
  VariableTable t;
  ASSERT_EQ(rt::fmi::fmu_variables(*r.model, {"x[1]"}, t), "");
  check_table(*r.model, t);
  std::map<std::string, const rt::fmi::Variable*> by_name;
  for (const auto& v : t.vars) by_name[v.name] = &v;
  ASSERT_TRUE(by_name.count("N") && by_name.count("omega") && by_name.count("k"));
  EXPECT_EQ(by_name["N"]->causality, Causality::Local);
  EXPECT_EQ(by_name["N"]->variability, rt::fmi::Variability::Constant);
  EXPECT_TRUE(by_name["N"]->has_start);
  EXPECT_EQ(by_name["N"]->start, 3.0);
  EXPECT_EQ(by_name["omega"]->causality, Causality::CalculatedParameter);
  EXPECT_EQ(by_name["omega"]->initial, rt::fmi::Initial::Calculated);
  EXPECT_FALSE(by_name["omega"]->has_start);
  EXPECT_EQ(by_name["k"]->causality, Causality::Parameter);
  EXPECT_EQ(by_name["k"]->variability, rt::fmi::Variability::Tunable);
  fmu::DescriptionOptions d;
  d.model_identifier = "Folded";
  d.token = "{0}";
  for (fmu::FmiVersion v : {fmu::FmiVersion::V2, fmu::FmiVersion::V3}) {
    for (const bool me : {false, true}) {
      SCOPED_TRACE(std::string(v == fmu::FmiVersion::V2 ? "FMI 2" : "FMI 3") +
                   (me ? " me" : " cs"));
      d.version = v;
      d.model_exchange = me;
      d.co_simulation = !me;
      std::string error;
      const std::string xml = fmu::model_description(*r.model, t, d, &error);
      ASSERT_NE(xml, "") << error;
      EXPECT_EQ(validate(xml, v), "");
      const std::string n = element_of(xml, "N"), omega = element_of(xml, "omega");
      EXPECT_NE(n.find("causality=\"local\" variability=\"constant\""), std::string::npos) << n;
      EXPECT_NE(n.find("start=\"3\""), std::string::npos) << n;
      EXPECT_NE(omega.find("causality=\"calculatedParameter\""), std::string::npos) << omega;
      EXPECT_NE(omega.find("initial=\"calculated\""), std::string::npos) << omega;
      EXPECT_EQ(omega.find("start="), std::string::npos) << omega;
      // an initial unknown: FMI 2 by its 1-based index, FMI 3 by its value reference
      const uint32_t vr = by_name["omega"]->vr;
      const std::string listed =
          v == fmu::FmiVersion::V2
              ? "<Unknown index=\"" + std::to_string(vr + 1) + "\""
              : "<InitialUnknown valueReference=\"" + std::to_string(vr) + "\"";
      const size_t initial =
          xml.find(v == fmu::FmiVersion::V2 ? "<InitialUnknowns>" : "<InitialUnknown ");
      ASSERT_NE(initial, std::string::npos) << xml;
      EXPECT_NE(xml.find(listed, initial), std::string::npos) << xml;
    }
  }
}

// Integer and Boolean variables and parameters have their FMI types (FMI 2 Integer and Boolean,
// FMI 3 Int32 and Boolean) with whole-number and true/false start values, and change at events
// only (variability discrete, or their parameter's); the documents validate.
TEST(FmuModelDescription, IntegerAndBooleanVariablesHaveTheirTypes) {
  CompileOptions o;
  o.file = "types.mbs";
  o.cache_dir = "off";
  o.source = kTypesSource;
  std::ostringstream emit, diag;
  CompileResult r = compile(o, emit, diag);
  ASSERT_TRUE(r.ok) << diag.str();
  VariableTable t;
  ASSERT_EQ(rt::fmi::fmu_variables(*r.model, {"n", "low"}, t), "");
  std::map<std::string, const rt::fmi::Variable*> by_name;
  for (const auto& v : t.vars) by_name[v.name] = &v;
  ASSERT_TRUE(by_name.count("m") && by_name.count("on") && by_name.count("n") &&
              by_name.count("low") && by_name.count("x"));
  EXPECT_EQ(by_name["m"]->type, rt::fmi::Type::Int32);
  EXPECT_EQ(by_name["on"]->type, rt::fmi::Type::Boolean);
  EXPECT_EQ(by_name["n"]->type, rt::fmi::Type::Int32);
  EXPECT_EQ(by_name["low"]->type, rt::fmi::Type::Boolean);
  EXPECT_EQ(by_name["x"]->type, rt::fmi::Type::Float64);
  EXPECT_EQ(by_name["n"]->variability, rt::fmi::Variability::Discrete);
  EXPECT_EQ(by_name["low"]->variability, rt::fmi::Variability::Discrete);
  fmu::DescriptionOptions d;
  d.model_identifier = "Types";
  d.token = "{0}";
  for (fmu::FmiVersion v : {fmu::FmiVersion::V2, fmu::FmiVersion::V3}) {
    for (const bool me : {false, true}) {
      SCOPED_TRACE(std::string(v == fmu::FmiVersion::V2 ? "FMI 2" : "FMI 3") +
                   (me ? " me" : " cs"));
      const bool v2 = v == fmu::FmiVersion::V2;
      d.version = v;
      d.model_exchange = me;
      d.co_simulation = !me;
      std::string error;
      const std::string xml = fmu::model_description(*r.model, t, d, &error);
      ASSERT_NE(xml, "") << error;
      EXPECT_EQ(validate(xml, v), "");
      const std::string m = element_of(xml, "m"), on = element_of(xml, "on"),
                        n = element_of(xml, "n"), low = element_of(xml, "low");
      EXPECT_NE(m.find(v2 ? "<Integer start=\"2\"/>" : "<Int32 "), std::string::npos) << m;
      EXPECT_NE(m.find("start=\"2\""), std::string::npos) << m;
      EXPECT_NE(on.find(v2 ? "<Boolean start=\"true\"/>" : "<Boolean "), std::string::npos) << on;
      EXPECT_NE(on.find("start=\"true\""), std::string::npos) << on;
      EXPECT_NE(n.find(v2 ? "<Integer" : "<Int32 "), std::string::npos) << n;
      EXPECT_NE(low.find(v2 ? "<Boolean" : "<Boolean "), std::string::npos) << low;
      EXPECT_NE(n.find("variability=\"discrete\""), std::string::npos) << n;
      EXPECT_EQ(element_of(xml, "x").find("<Real") == std::string::npos, !v2);
    }
  }
}

TEST(FmuModelDescription, BadRequestsAreErrors) {
  auto m = compiled("examples/pendulum.mbs");
  ASSERT_TRUE(m);
  VariableTable t;
  EXPECT_NE(rt::fmi::fmu_variables(*m, {"no_such_variable"}, t).find("'no_such_variable'"),
            std::string::npos);
  ASSERT_EQ(rt::fmi::fmu_variables(*m, {}, t), "");
  fmu::DescriptionOptions o;
  o.token = "{x}";
  std::string error;
  o.model_identifier = "not an identifier";
  EXPECT_EQ(fmu::model_description(*m, t, o, &error), "");
  EXPECT_NE(error.find("C identifier"), std::string::npos);
  o.model_identifier = "ok";
  o.co_simulation = o.model_exchange = false;
  EXPECT_EQ(fmu::model_description(*m, t, o, &error), "");
  EXPECT_EQ(fmu::xml_escape("a<b>&\"c\"\n"), "a&lt;b&gt;&amp;&quot;c&quot;&#10;");
}

}  // namespace
}  // namespace mbs
