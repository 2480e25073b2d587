// What the FMI C functions are thin over (runtime/fmi): the configuration text an FMU carries,
// loading the embedded model from its image and configuration, and Component's state machine,
// logger and FMU state handles, with a JIT-compiled model standing in for the FMU's library.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "fmu_test_util.h"
#include "runtime/fmi/Component.h"
#include "runtime/fmi/Config.h"
#include "runtime/fmi/Embedded.h"
#include "runtime/model/ModelImage.h"

namespace mbs {
namespace {

using rt::fmi::Component;
using rt::fmi::FmuConfig;
using rt::fmi::Status;
using rt::fmi::Unit;
using Phase = Component::Phase;

FmuConfig config(bool cs, bool me) {
  FmuConfig c;
  c.fmi_version = 3;
  c.model_identifier = "Osc";
  c.instantiation_token = "{1234-abcd}";
  c.co_simulation = cs;
  c.model_exchange = me;
  c.outputs = {"x", "e"};
  c.options = {{"solver", "gen-alpha"}, {"h", "0.01"}, {"rho_inf", "0.8"}};
  c.stop_time = 2.5;
  return c;
}

// The model's image and configuration loaded as an FMU would load them, the kernels resolved
// in the JIT's code.
std::string load(const std::shared_ptr<const rt::CompiledModel>& m, const std::string& cfg,
                 rt::fmi::EmbeddedModel& out, std::string image = {}) {
  if (image.empty()) image = rt::write_model_image(*m);
  std::map<std::string, rt::KernelFn> code;
  rt::for_each_kernel(*m, [&](const char*, const rt::Kernel& k) {
    if (!k.symbol.empty()) code[k.symbol] = k.fn;
  });
  return rt::fmi::load_embedded(
      image, cfg,
      [&](const std::string& symbol) -> rt::KernelFn {
        auto it = code.find(symbol);
        return it == code.end() ? nullptr : it->second;
      },
      out);
}

std::shared_ptr<const rt::CompiledModel> oscillator() {
  static auto m = testutil::compile_source("fmi_component_osc", testutil::kOscillatorSource);
  return m;
}

std::shared_ptr<const rt::fmi::EmbeddedModel> embedded(bool cs = true, bool me = true) {
  auto e = std::make_shared<rt::fmi::EmbeddedModel>();
  const std::string why = load(oscillator(), rt::fmi::write_fmu_config(config(cs, me)), *e);
  EXPECT_EQ(why, "");
  return e;
}

struct Log {
  std::vector<std::tuple<Status, std::string, std::string>> lines;
  Component::Logger logger() {
    return [this](Status s, const char* category, const std::string& msg) {
      lines.emplace_back(s, category, msg);
    };
  }
  bool has(const std::string& text) const {
    for (const auto& l : lines)
      if (std::get<2>(l).find(text) != std::string::npos) return true;
    return false;
  }
};

uint32_t vr(const rt::fmi::EmbeddedModel& e, const std::string& name) {
  for (const auto& v : e.variables->vars)
    if (v.name == name) return v.vr;
  ADD_FAILURE() << "no variable " << name;
  return 0;
}

TEST(FmiConfig, RoundTripAndErrors) {
  const FmuConfig c = config(true, true);
  const std::string text = rt::fmi::write_fmu_config(c);
  EXPECT_EQ(text.rfind("mbs-fmu-config 1\n", 0), 0u);
  FmuConfig r;
  ASSERT_EQ(rt::fmi::parse_fmu_config(text, r), "");
  EXPECT_EQ(r.fmi_version, 3);
  EXPECT_EQ(r.model_identifier, "Osc");
  EXPECT_EQ(r.instantiation_token, "{1234-abcd}");
  EXPECT_TRUE(r.co_simulation && r.model_exchange);
  EXPECT_EQ(r.outputs, c.outputs);
  EXPECT_EQ(r.options, c.options);
  EXPECT_EQ(r.stop_time, 2.5);
  EXPECT_EQ(rt::fmi::write_fmu_config(r), text);
  FmuConfig me;
  ASSERT_EQ(rt::fmi::parse_fmu_config("mbs-fmu-config 1\r\nmodel_identifier M\ntypes me\n"
                                      "output a b\n",
                                      me),
            "");
  EXPECT_FALSE(me.co_simulation);
  EXPECT_EQ(me.outputs, std::vector<std::string>{"a b"});
  for (const char* bad : {"", "mbs-fmu-config 2\ntypes cs\nmodel_identifier M\n", "types cs\n",
                          "mbs-fmu-config 1\nmodel_identifier M\n", "mbs-fmu-config 1\ntypes cs\n",
                          "mbs-fmu-config 1\nmodel_identifier M\ntypes xx\n",
                          "mbs-fmu-config 1\nmodel_identifier M\ntypes cs\nfmi_version 4\n",
                          "mbs-fmu-config 1\nmodel_identifier M\ntypes cs\nstop_time 1x\n",
                          "mbs-fmu-config 1\nmodel_identifier M\ntypes cs\noption h\n",
                          "mbs-fmu-config 1\nmodel_identifier M\ntypes cs\nfoo 1\n"}) {
    FmuConfig x;
    EXPECT_NE(rt::fmi::parse_fmu_config(bad, x), "") << bad;
  }
}

TEST(FmiEmbedded, LoadsTheModelAndRefusesBrokenPieces) {
  const auto e = embedded();
  ASSERT_TRUE(e->model && e->variables);
  EXPECT_EQ(e->options.h, 0.01);
  EXPECT_EQ(e->options.t_end, 2.5);
  EXPECT_EQ(e->variables->outputs.size(), 2u);
  rt::fmi::EmbeddedModel x;
  const std::string cfg = rt::fmi::write_fmu_config(config(true, false));
  EXPECT_NE(load(oscillator(), cfg, x, "not an image"), "");
  std::string truncated = rt::write_model_image(*oscillator());
  truncated.resize(truncated.size() / 2);
  EXPECT_NE(load(oscillator(), cfg, x, truncated), "");
  EXPECT_NE(rt::fmi::load_embedded(
                rt::write_model_image(*oscillator()), cfg,
                [](const std::string&) -> rt::KernelFn { return nullptr; }, x),
            "");
  FmuConfig c = config(true, false);
  c.outputs = {"nope"};
  EXPECT_NE(load(oscillator(), rt::fmi::write_fmu_config(c), x).find("nope"), std::string::npos);
  c = config(true, false);
  c.options = {{"h", "-1"}};
  EXPECT_NE(load(oscillator(), rt::fmi::write_fmu_config(c), x), "");
}

TEST(FmiComponent, InstantiationChecks) {
  const auto e = embedded(true, false);
  Log log;
  EXPECT_FALSE(
      Component::instantiate(e, "", Unit::Kind::CoSimulation, "a", "{wrong}", log.logger(), false));
  EXPECT_TRUE(log.has("{wrong}"));
  EXPECT_FALSE(Component::instantiate(e, "", Unit::Kind::ModelExchange, "a", "{1234-abcd}",
                                      log.logger(), false));
  EXPECT_TRUE(log.has("model exchange"));
  EXPECT_FALSE(Component::instantiate(nullptr, "", Unit::Kind::CoSimulation, "a", nullptr,
                                      log.logger(), false));
  EXPECT_TRUE(log.has("no model embedded"));
  EXPECT_FALSE(Component::instantiate(e, "", Unit::Kind::CoSimulation, nullptr, nullptr,
                                      log.logger(), false));
  EXPECT_FALSE(Component::instantiate(e, "", Unit::Kind::CoSimulation, "a", "{x}", nullptr,
                                      false));  // no logger: no crash
  // two instances of one FMU run independently
  auto a =
      Component::instantiate(e, "", Unit::Kind::CoSimulation, "a", "{1234-abcd}", nullptr, false);
  auto b = Component::instantiate(e, "", Unit::Kind::CoSimulation, "b", nullptr, nullptr, false);
  ASSERT_TRUE(a && b);
  const uint32_t k = vr(*e, "k"), x = vr(*e, "x");
  const double nine = 9.0;
  ASSERT_EQ(b->set_float64("set", &k, 1, &nine, 1), Status::Ok);
  for (Component* c : {a.get(), b.get()}) {
    ASSERT_EQ(c->enter_initialization(), Status::Ok);
    ASSERT_EQ(c->exit_initialization(), Status::Ok);
    ASSERT_EQ(c->do_step(0.0, 1.0, nullptr), Status::Ok);
  }
  double xa = 0.0, xb = 0.0;
  ASSERT_EQ(a->get_float64("get", &x, 1, &xa, 1), Status::Ok);
  ASSERT_EQ(b->get_float64("get", &x, 1, &xb, 1), Status::Ok);
  EXPECT_NEAR(xa, std::cos(2.0), 1e-3);
  EXPECT_NEAR(xb, std::cos(3.0), 1e-3);
}

TEST(FmiComponent, CoSimulationModesAndErrors) {
  const auto e = embedded();
  Log log;
  auto c = Component::instantiate(e, "", Unit::Kind::CoSimulation, "inst1", nullptr, log.logger(),
                                  false);
  ASSERT_TRUE(c);
  const uint32_t x = vr(*e, "x");
  double value = 0.0, t_last = -1.0;
  // wrong mode: an error naming the function and the mode, the mode unchanged
  EXPECT_EQ(c->do_step(0.0, 0.1, &t_last), Status::Error);
  EXPECT_TRUE(log.has("doStep: not allowed in instantiated"));
  EXPECT_EQ(c->exit_initialization(), Status::Error);
  EXPECT_EQ(c->phase(), Phase::Instantiated);
  EXPECT_EQ(std::get<1>(log.lines.back()), "logStatusError");
  // bad arguments
  EXPECT_EQ(c->get_float64("fmi3GetFloat64", &x, 1, nullptr, 1), Status::Error);
  EXPECT_EQ(c->get_float64("fmi3GetFloat64", &x, 1, &value, 2), Status::Error);
  const uint32_t bad = 99999;
  EXPECT_EQ(c->get_float64("fmi3GetFloat64", &bad, 1, &value, 1), Status::Error);
  EXPECT_TRUE(log.has("fmi3GetFloat64: 99999 is not a value reference"));
  EXPECT_EQ(c->other_type("fmi3GetInt32", &x, 1), Status::Error);
  EXPECT_TRUE(log.has("'x' is not of this type"));
  EXPECT_EQ(c->other_type("fmi3GetInt32", nullptr, 0), Status::Ok);
  EXPECT_EQ(c->set_debug_logging(true, 1, std::vector<const char*>{"logNope"}.data()),
            Status::Error);
  // the normal sequence
  ASSERT_EQ(c->setup_experiment(false, 0.0, 0.0, true, 1.0), Status::Ok);
  ASSERT_EQ(c->enter_initialization(), Status::Ok);
  EXPECT_EQ(c->setup_experiment(false, 0.0, 0.0, true, 1.0), Status::Error);
  ASSERT_EQ(c->exit_initialization(), Status::Ok);
  EXPECT_EQ(c->phase(), Phase::StepMode);
  for (int n = 0; n < 10; ++n) ASSERT_EQ(c->do_step(0.1 * n, 0.1, &t_last), Status::Ok);
  EXPECT_NEAR(t_last, 1.0, 1e-12);
  ASSERT_EQ(c->get_float64("get", &x, 1, &value, 1), Status::Ok);
  EXPECT_NEAR(value, std::cos(2.0), 1e-3);
  // an importer's mistake in doStep keeps the mode; events are logged only when asked for
  const size_t before = log.lines.size();
  EXPECT_EQ(c->do_step(0.5, 0.1, &t_last), Status::Error);
  EXPECT_EQ(c->phase(), Phase::StepMode);
  EXPECT_EQ(log.lines.size(), before + 1);
  ASSERT_EQ(c->set_debug_logging(true, 0, nullptr), Status::Ok);
  ASSERT_EQ(c->terminate(), Status::Ok);
  EXPECT_EQ(c->do_step(1.0, 0.1, &t_last), Status::Error);
  ASSERT_EQ(c->get_float64("get", &x, 1, &value, 1), Status::Ok);  // allowed when terminated
  ASSERT_EQ(c->reset(), Status::Ok);
  EXPECT_EQ(c->phase(), Phase::Instantiated);
  ASSERT_EQ(c->get_float64("get", &x, 1, &value, 1), Status::Ok);
  EXPECT_EQ(value, 1.0);
  ASSERT_EQ(c->enter_initialization(), Status::Ok);
  ASSERT_EQ(c->exit_initialization(), Status::Ok);
  EXPECT_TRUE(log.has("initialized at t = 0"));  // an event, with logging on
  // ME functions on a co-simulation instance are refused
  double dx[3];
  EXPECT_EQ(c->get_derivatives(dx, 3), Status::Error);
  EXPECT_EQ(c->set_time(0.0), Status::Error);
}

TEST(FmiComponent, SolverFailureEntersErrorMode) {
  auto m = testutil::compile_source("fmi_component_blowup",
                                    "model Blowup\n  Real x(start = 1);\nequation\n"
                                    "  der(x) = x*x;\nend Blowup;\n");
  FmuConfig cfg = config(true, false);
  cfg.outputs = {"x"};
  auto e = std::make_shared<rt::fmi::EmbeddedModel>();
  ASSERT_EQ(load(m, rt::fmi::write_fmu_config(cfg), *e), "");
  Log log;
  auto c = Component::instantiate(e, "", Unit::Kind::CoSimulation, "blowup", nullptr, log.logger(),
                                  false);
  ASSERT_EQ(c->enter_initialization(), Status::Ok);
  ASSERT_EQ(c->exit_initialization(), Status::Ok);
  double t_last = 0.0;
  EXPECT_EQ(c->do_step(0.0, 2.0, &t_last), Status::Error);
  EXPECT_EQ(c->phase(), Phase::Error);
  EXPECT_GT(t_last, 0.5);
  EXPECT_LT(t_last, 1.0);
  EXPECT_TRUE(log.has("doStep: error: "));
  EXPECT_EQ(c->do_step(t_last, 0.1, nullptr), Status::Error);
  const uint32_t x = vr(*e, "x");
  double value = 0.0;
  EXPECT_EQ(c->get_float64("get", &x, 1, &value, 1), Status::Ok);  // for diagnosis
  ASSERT_EQ(c->reset(), Status::Ok);
  EXPECT_EQ(c->phase(), Phase::Instantiated);
}

TEST(FmiComponent, ModelExchangeModes) {
  const auto e = embedded();
  auto c = Component::instantiate(e, "", Unit::Kind::ModelExchange, "me", nullptr, nullptr, false);
  ASSERT_TRUE(c);
  size_t n = 0;
  ASSERT_EQ(c->get_number_of_states(&n), Status::Ok);
  EXPECT_EQ(n, 3u);
  ASSERT_EQ(c->get_number_of_event_indicators(&n), Status::Ok);
  EXPECT_EQ(n, 0u);
  ASSERT_EQ(c->enter_initialization(), Status::Ok);
  ASSERT_EQ(c->exit_initialization(), Status::Ok);
  EXPECT_EQ(c->phase(), Phase::EventMode);
  EXPECT_EQ(c->update_discrete_states("fmi2NewDiscreteStates", nullptr), Status::Ok);
  EXPECT_EQ(c->completed_integrator_step(nullptr, nullptr), Status::Error);  // event mode
  ASSERT_EQ(c->enter_continuous_time_mode(), Status::Ok);
  // explicit Euler by the importer: x'' = -4 x
  std::vector<double> x(3), dx(3);
  ASSERT_EQ(c->get_continuous_states(x.data(), 3), Status::Ok);
  const double h = 1e-4;
  for (int k = 0; k < 10000; ++k) {
    ASSERT_EQ(c->set_time(k * h), Status::Ok);
    ASSERT_EQ(c->set_continuous_states(x.data(), 3), Status::Ok);
    ASSERT_EQ(c->get_derivatives(dx.data(), 3), Status::Ok);
    for (size_t i = 0; i < 3; ++i) x[i] += h * dx[i];
    bool enter = true, stop = true;
    ASSERT_EQ(c->completed_integrator_step(&enter, &stop), Status::Ok);
    EXPECT_FALSE(enter || stop);
  }
  EXPECT_NEAR(x[0], std::cos(2.0), 2e-3);
  EXPECT_NEAR(x[2], std::exp(-1.0), 1e-4);
  double z = 0.0;
  EXPECT_EQ(c->get_event_indicators(&z, 0), Status::Ok);
  EXPECT_EQ(c->get_event_indicators(&z, 1), Status::Error);
  EXPECT_EQ(c->get_derivatives(dx.data(), 2), Status::Error);
  EXPECT_EQ(c->phase(), Phase::ContinuousTimeMode);
  EXPECT_EQ(c->do_step(1.0, 0.1, nullptr), Status::Error);
  // d der(x,2) / d x = -4
  const uint32_t unknown = vr(*e, "der(x,2)"), known = vr(*e, "x");
  const double seed = 1.0;
  double sens = 0.0;
  ASSERT_EQ(c->directional_derivative("dd", &unknown, 1, &known, 1, &seed, &sens), Status::Ok);
  EXPECT_NEAR(sens, -4.0, 1e-12);
  EXPECT_EQ(c->directional_derivative("dd", &unknown, 1, &known, 1, nullptr, &sens), Status::Error);
  ASSERT_EQ(c->enter_event_mode(), Status::Ok);
  ASSERT_EQ(c->terminate(), Status::Ok);
}

// An FMU state resumes in the mode it was taken in: one of continuous-time mode, restored in
// another instance that is only instantiated (or in this one, in event mode), goes on in
// continuous-time mode, where the importer sets states and gets derivatives; one of event mode
// goes on in event mode.
TEST(FmiComponent, ModelExchangeStateResumesInTheModeItWasTakenIn) {
  const auto e = embedded();
  auto c = Component::instantiate(e, "", Unit::Kind::ModelExchange, "me", nullptr, nullptr, false);
  auto other =
      Component::instantiate(e, "", Unit::Kind::ModelExchange, "o", nullptr, nullptr, false);
  ASSERT_TRUE(c && other);
  ASSERT_EQ(c->enter_initialization(), Status::Ok);
  ASSERT_EQ(c->exit_initialization(), Status::Ok);
  void* in_event = nullptr;
  ASSERT_EQ(c->get_state(&in_event), Status::Ok);
  ASSERT_EQ(c->update_discrete_states("fmi2NewDiscreteStates", nullptr), Status::Ok);
  ASSERT_EQ(c->enter_continuous_time_mode(), Status::Ok);
  std::vector<double> x(3), dx(3);
  ASSERT_EQ(c->get_continuous_states(x.data(), 3), Status::Ok);
  ASSERT_EQ(c->set_time(0.1), Status::Ok);
  void* in_continuous_time = nullptr;
  ASSERT_EQ(c->get_state(&in_continuous_time), Status::Ok);
  size_t size = 0;
  ASSERT_EQ(c->serialized_size(in_continuous_time, &size), Status::Ok);
  std::vector<uint8_t> bytes(size);
  ASSERT_EQ(c->serialize(in_continuous_time, bytes.data(), size), Status::Ok);
  void* copy = nullptr;
  ASSERT_EQ(other->deserialize(bytes.data(), size, &copy), Status::Ok);
  ASSERT_EQ(other->set_state(copy), Status::Ok);
  EXPECT_EQ(other->phase(), Phase::ContinuousTimeMode);
  EXPECT_EQ(other->set_time(0.2), Status::Ok);
  EXPECT_EQ(other->set_continuous_states(x.data(), 3), Status::Ok);
  EXPECT_EQ(other->get_derivatives(dx.data(), 3), Status::Ok);
  bool enter = true, stop = true;
  EXPECT_EQ(other->completed_integrator_step(&enter, &stop), Status::Ok);
  // in this instance: event mode back to continuous time, and back again
  ASSERT_EQ(c->enter_event_mode(), Status::Ok);
  ASSERT_EQ(c->set_state(in_continuous_time), Status::Ok);
  EXPECT_EQ(c->phase(), Phase::ContinuousTimeMode);
  EXPECT_EQ(c->set_continuous_states(x.data(), 3), Status::Ok);
  ASSERT_EQ(c->set_state(in_event), Status::Ok);
  EXPECT_EQ(c->phase(), Phase::EventMode);
  EXPECT_EQ(c->update_discrete_states("fmi2NewDiscreteStates", nullptr), Status::Ok);
  EXPECT_EQ(c->enter_continuous_time_mode(), Status::Ok);
}

// Integer and Boolean variables through the get/set functions of their types (as FMI's value
// references are per type): an Integer parameter is read and set as an Integer, not as a Real;
// a Boolean one reads 1 for true; a Real is not read as an Integer.
TEST(FmiComponent, IntegerAndBooleanVariablesThroughTheirTypes) {
  const auto m = testutil::compile_source(
      "fmi_component_types",
      "model Types\n  parameter Integer m = 2;\n  parameter Boolean on = true;\n"
      "  Real x(start = 1, fixed = true);\nequation\n  der(x) = if on then -m * x else 0;\n"
      "end Types;\n");
  FmuConfig cfg = config(true, true);
  cfg.outputs = {"x"};
  auto e = std::make_shared<rt::fmi::EmbeddedModel>();
  ASSERT_EQ(load(m, rt::fmi::write_fmu_config(cfg), *e), "");
  Log log;
  auto c =
      Component::instantiate(e, "", Unit::Kind::ModelExchange, "t", nullptr, log.logger(), false);
  ASSERT_TRUE(c);
  const uint32_t vm = vr(*e, "m"), von = vr(*e, "on"), vx = vr(*e, "x");
  double value = 0.0;
  ASSERT_EQ(c->get_typed("fmi2GetInteger", rt::fmi::Type::Int32, &vm, 1, &value), Status::Ok);
  EXPECT_EQ(value, 2.0);
  EXPECT_EQ(c->get_float64("fmi2GetReal", &vm, 1, &value, 1), Status::Error);
  EXPECT_TRUE(log.has("fmi2GetReal: 'm' is of type Int32 (Integer), not Float64 (Real)"));
  const double three = 3.0;
  EXPECT_EQ(c->set_float64("fmi2SetReal", &vm, 1, &three, 1), Status::Error);
  ASSERT_EQ(c->set_typed("fmi2SetInteger", rt::fmi::Type::Int32, &vm, 1, &three), Status::Ok);
  ASSERT_EQ(c->get_typed("fmi2GetInteger", rt::fmi::Type::Int32, &vm, 1, &value), Status::Ok);
  EXPECT_EQ(value, 3.0);
  ASSERT_EQ(c->get_typed("fmi2GetBoolean", rt::fmi::Type::Boolean, &von, 1, &value), Status::Ok);
  EXPECT_EQ(value, 1.0);
  EXPECT_EQ(c->get_typed("fmi2GetInteger", rt::fmi::Type::Int32, &vx, 1, &value), Status::Error);
  // the new value acts: der(x) = -3 x at x = 1
  ASSERT_EQ(c->enter_initialization(), Status::Ok);
  ASSERT_EQ(c->exit_initialization(), Status::Ok);
  ASSERT_EQ(c->update_discrete_states("fmi2NewDiscreteStates", nullptr), Status::Ok);
  ASSERT_EQ(c->enter_continuous_time_mode(), Status::Ok);
  double dx = 0.0;
  ASSERT_EQ(c->get_derivatives(&dx, 1), Status::Ok);
  EXPECT_EQ(dx, -3.0);
}

TEST(FmiComponent, StateHandles) {
  const auto e = embedded();
  Log log;
  auto c =
      Component::instantiate(e, "", Unit::Kind::CoSimulation, "s", nullptr, log.logger(), false);
  auto other =
      Component::instantiate(e, "", Unit::Kind::CoSimulation, "o", nullptr, nullptr, false);
  ASSERT_EQ(c->enter_initialization(), Status::Ok);
  ASSERT_EQ(c->exit_initialization(), Status::Ok);
  ASSERT_EQ(c->do_step(0.0, 0.4, nullptr), Status::Ok);
  void* state = nullptr;
  ASSERT_EQ(c->get_state(&state), Status::Ok);
  ASSERT_NE(state, nullptr);
  void* same = state;
  ASSERT_EQ(c->get_state(&same), Status::Ok);  // overwrites the given one
  EXPECT_EQ(same, state);
  size_t size = 0;
  ASSERT_EQ(c->serialized_size(state, &size), Status::Ok);
  std::vector<uint8_t> bytes(size);
  ASSERT_EQ(c->serialize(state, bytes.data(), bytes.size()), Status::Ok);
  EXPECT_EQ(c->serialize(state, bytes.data(), bytes.size() - 1), Status::Error);
  ASSERT_EQ(c->do_step(0.4, 0.6, nullptr), Status::Ok);
  const uint32_t x = vr(*e, "x");
  double a = 0.0, b = 0.0, d = 0.0;
  ASSERT_EQ(c->get_float64("get", &x, 1, &a, 1), Status::Ok);
  ASSERT_EQ(c->set_state(state), Status::Ok);
  EXPECT_EQ(c->time(), 0.4);
  ASSERT_EQ(c->do_step(0.4, 0.6, nullptr), Status::Ok);
  ASSERT_EQ(c->get_float64("get", &x, 1, &b, 1), Status::Ok);
  EXPECT_EQ(a, b);
  // the bytes in another instance, still instantiated: it continues from t = 0.4
  void* copy = nullptr;
  ASSERT_EQ(other->deserialize(bytes.data(), bytes.size(), &copy), Status::Ok);
  ASSERT_EQ(other->set_state(copy), Status::Ok);
  EXPECT_EQ(other->phase(), Phase::StepMode);
  ASSERT_EQ(other->do_step(0.4, 0.6, nullptr), Status::Ok);
  ASSERT_EQ(other->get_float64("get", &x, 1, &d, 1), Status::Ok);
  EXPECT_EQ(a, d);
  // handles of another instance and damaged bytes are errors
  EXPECT_EQ(c->set_state(copy), Status::Error);
  int not_a_state = 0;
  EXPECT_EQ(c->set_state(&not_a_state), Status::Error);
  void* junk = &not_a_state;
  EXPECT_EQ(c->free_state(&junk), Status::Error);
  bytes[3] ^= 0x55;
  void* broken = nullptr;
  EXPECT_EQ(c->deserialize(bytes.data(), bytes.size(), &broken), Status::Error);
  EXPECT_EQ(broken, nullptr);
  EXPECT_TRUE(log.has("deserializeFMUState"));
  ASSERT_EQ(c->free_state(&state), Status::Ok);
  EXPECT_EQ(state, nullptr);
  EXPECT_EQ(c->free_state(&state), Status::Ok);
}

}  // namespace
}  // namespace mbs
