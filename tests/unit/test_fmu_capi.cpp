// The FMI 2 and 3 C functions of the runtime blob (tools/fmu/blob), compiled into this test
// (tests/CMakeLists.txt) and called as an importer calls them. The test defines the embedding
// object's symbols itself (the blob declares them weak) and fills them before the first call
// loads them: a JIT-compiled model's image, configuration and kernel table. The same functions
// in a linked FMU are the exporter's end-to-end test.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "fmu_test_util.h"
#include "runtime/fmi/Config.h"
#include "runtime/fmi/Variables.h"
#include "runtime/model/ModelImage.h"
#include "tools/fmu/blob/Fmi2Types.h"
#include "tools/fmu/blob/Fmi3Types.h"

// What the exporter's embedding object defines (here writable, filled by the test).
extern "C" {
struct MbsFmuKernel {
  const char* symbol;
  int32_t (*fn)(const double*, double*);
};
unsigned char mbs_fmu_model_image[1 << 22];
uint64_t mbs_fmu_model_image_size = 0;
char mbs_fmu_config[1 << 14];
MbsFmuKernel mbs_fmu_kernels[512];
uint64_t mbs_fmu_kernel_count = 0;

// the functions called (declared as the standards declare them)
const char* fmi2GetVersion(void);
const char* fmi2GetTypesPlatform(void);
fmi2Component fmi2Instantiate(fmi2String, fmi2Type, fmi2String, fmi2String,
                              const fmi2CallbackFunctions*, fmi2Boolean, fmi2Boolean);
void fmi2FreeInstance(fmi2Component);
fmi2Status fmi2SetDebugLogging(fmi2Component, fmi2Boolean, size_t, const fmi2String[]);
fmi2Status fmi2SetupExperiment(fmi2Component, fmi2Boolean, fmi2Real, fmi2Real, fmi2Boolean,
                               fmi2Real);
fmi2Status fmi2EnterInitializationMode(fmi2Component);
fmi2Status fmi2ExitInitializationMode(fmi2Component);
fmi2Status fmi2Terminate(fmi2Component);
fmi2Status fmi2Reset(fmi2Component);
fmi2Status fmi2GetReal(fmi2Component, const fmi2ValueReference[], size_t, fmi2Real[]);
fmi2Status fmi2SetReal(fmi2Component, const fmi2ValueReference[], size_t, const fmi2Real[]);
fmi2Status fmi2GetInteger(fmi2Component, const fmi2ValueReference[], size_t, fmi2Integer[]);
fmi2Status fmi2DoStep(fmi2Component, fmi2Real, fmi2Real, fmi2Boolean);
fmi2Status fmi2GetRealStatus(fmi2Component, const fmi2StatusKind, fmi2Real*);
fmi2Status fmi2GetStatus(fmi2Component, const fmi2StatusKind, fmi2Status*);
fmi2Status fmi2GetFMUstate(fmi2Component, fmi2FMUstate*);
fmi2Status fmi2SetFMUstate(fmi2Component, fmi2FMUstate);
fmi2Status fmi2FreeFMUstate(fmi2Component, fmi2FMUstate*);
fmi2Status fmi2SerializedFMUstateSize(fmi2Component, fmi2FMUstate, size_t*);
fmi2Status fmi2SerializeFMUstate(fmi2Component, fmi2FMUstate, fmi2Byte[], size_t);
fmi2Status fmi2DeSerializeFMUstate(fmi2Component, const fmi2Byte[], size_t, fmi2FMUstate*);
fmi2Status fmi2NewDiscreteStates(fmi2Component, fmi2EventInfo*);
fmi2Status fmi2EnterContinuousTimeMode(fmi2Component);
fmi2Status fmi2SetTime(fmi2Component, fmi2Real);
fmi2Status fmi2SetContinuousStates(fmi2Component, const fmi2Real[], size_t);
fmi2Status fmi2GetContinuousStates(fmi2Component, fmi2Real[], size_t);
fmi2Status fmi2GetDerivatives(fmi2Component, fmi2Real[], size_t);
fmi2Status fmi2GetDirectionalDerivative(fmi2Component, const fmi2ValueReference[], size_t,
                                        const fmi2ValueReference[], size_t, const fmi2Real[],
                                        fmi2Real[]);
fmi2Status fmi2CompletedIntegratorStep(fmi2Component, fmi2Boolean, fmi2Boolean*, fmi2Boolean*);

const char* fmi3GetVersion(void);
fmi3Instance fmi3InstantiateCoSimulation(fmi3String, fmi3String, fmi3String, fmi3Boolean,
                                         fmi3Boolean, fmi3Boolean, fmi3Boolean,
                                         const fmi3ValueReference[], size_t,
                                         fmi3InstanceEnvironment, fmi3LogMessageCallback,
                                         fmi3IntermediateUpdateCallback);
fmi3Instance fmi3InstantiateModelExchange(fmi3String, fmi3String, fmi3String, fmi3Boolean,
                                          fmi3Boolean, fmi3InstanceEnvironment,
                                          fmi3LogMessageCallback);
fmi3Instance fmi3InstantiateScheduledExecution(fmi3String, fmi3String, fmi3String, fmi3Boolean,
                                               fmi3Boolean, fmi3InstanceEnvironment,
                                               fmi3LogMessageCallback, fmi3ClockUpdateCallback,
                                               fmi3LockPreemptionCallback,
                                               fmi3UnlockPreemptionCallback);
void fmi3FreeInstance(fmi3Instance);
fmi3Status fmi3EnterInitializationMode(fmi3Instance, fmi3Boolean, fmi3Float64, fmi3Float64,
                                       fmi3Boolean, fmi3Float64);
fmi3Status fmi3ExitInitializationMode(fmi3Instance);
fmi3Status fmi3GetFloat64(fmi3Instance, const fmi3ValueReference[], size_t, fmi3Float64[], size_t);
fmi3Status fmi3SetFloat64(fmi3Instance, const fmi3ValueReference[], size_t, const fmi3Float64[],
                          size_t);
fmi3Status fmi3GetInt32(fmi3Instance, const fmi3ValueReference[], size_t, fmi3Int32[], size_t);
fmi3Status fmi3DoStep(fmi3Instance, fmi3Float64, fmi3Float64, fmi3Boolean, fmi3Boolean*,
                      fmi3Boolean*, fmi3Boolean*, fmi3Float64*);
fmi3Status fmi3GetAdjointDerivative(fmi3Instance, const fmi3ValueReference[], size_t,
                                    const fmi3ValueReference[], size_t, const fmi3Float64[], size_t,
                                    fmi3Float64[], size_t);
fmi3Status fmi3GetNumberOfContinuousStates(fmi3Instance, size_t*);
fmi3Status fmi3UpdateDiscreteStates(fmi3Instance, fmi3Boolean*, fmi3Boolean*, fmi3Boolean*,
                                    fmi3Boolean*, fmi3Boolean*, fmi3Float64*);
fmi3Status fmi3EnterContinuousTimeMode(fmi3Instance);
fmi3Status fmi3SetContinuousStates(fmi3Instance, const fmi3Float64[], size_t);
fmi3Status fmi3GetContinuousStateDerivatives(fmi3Instance, fmi3Float64[], size_t);
fmi3Status fmi3Terminate(fmi3Instance);
}

namespace mbs {
namespace {

constexpr const char* kToken = "{8c4e810f-3df3-4a00-8276-176fa3c9f000}";

std::vector<std::string> g_log;  // every message the importer's loggers received

void log2(fmi2ComponentEnvironment, fmi2String instance, fmi2Status status, fmi2String category,
          fmi2String message, ...) {
  char text[4096];
  va_list args;
  va_start(args, message);
  std::vsnprintf(text, sizeof text, message, args);
  va_end(args);
  g_log.push_back(std::string(instance) + " [" + category + "] " + std::to_string(status) + ": " +
                  text);
}

void log3(fmi3InstanceEnvironment env, fmi3Status status, fmi3String category, fmi3String message) {
  g_log.push_back(std::string(static_cast<const char*>(env)) + " [" + category + "] " +
                  std::to_string(status) + ": " + message);
}

bool logged(const std::string& text) {
  for (const auto& l : g_log)
    if (l.find(text) != std::string::npos) return true;
  return false;
}

std::shared_ptr<const rt::CompiledModel> g_model;  // keeps the kernels' code alive

// Fills the embedding symbols (once, before the first instantiation loads them).
class FmuCapi : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    g_model = testutil::compile_source("fmu_capi_osc", testutil::kOscillatorSource);
    ASSERT_TRUE(g_model);
    const std::string image = rt::write_model_image(*g_model);
    ASSERT_LT(image.size(), sizeof mbs_fmu_model_image);
    std::memcpy(mbs_fmu_model_image, image.data(), image.size());
    mbs_fmu_model_image_size = image.size();
    rt::fmi::FmuConfig c;
    c.fmi_version = 2;
    c.model_identifier = "Osc";
    c.instantiation_token = kToken;
    c.co_simulation = c.model_exchange = true;
    c.outputs = {"x", "e"};
    c.options = {{"h", "0.001"}};
    c.stop_time = 10;
    const std::string text = rt::fmi::write_fmu_config(c);
    ASSERT_LT(text.size(), sizeof mbs_fmu_config);
    std::memcpy(mbs_fmu_config, text.c_str(), text.size() + 1);
    static std::vector<std::string> symbols;
    rt::for_each_kernel(*g_model, [&](const char*, const rt::Kernel& k) {
      if (k.symbol.empty() || mbs_fmu_kernel_count >= 512) return;
      symbols.push_back(k.symbol);
      mbs_fmu_kernels[mbs_fmu_kernel_count++] = {nullptr, k.fn};
    });
    for (size_t k = 0; k < symbols.size(); ++k) mbs_fmu_kernels[k].symbol = symbols[k].c_str();
  }

  uint32_t vr(const char* name) const {
    rt::fmi::VariableTable t;
    EXPECT_EQ(rt::fmi::fmu_variables(*g_model, {"x", "e"}, t), "");
    for (const auto& v : t.vars)
      if (v.name == name) return v.vr;
    ADD_FAILURE() << name;
    return 0;
  }

  fmi2CallbackFunctions callbacks{log2, nullptr, nullptr, nullptr, nullptr};
};

TEST_F(FmuCapi, Fmi2CoSimulation) {
  EXPECT_STREQ(fmi2GetVersion(), "2.0");
  EXPECT_STREQ(fmi2GetTypesPlatform(), "default");
  EXPECT_EQ(fmi2Instantiate("bad", fmi2CoSimulation, "{other}", "", &callbacks, 0, 0), nullptr);
  EXPECT_TRUE(logged("bad [logStatusError] 3: instantiate: the instantiation token"));
  fmi2Component c = fmi2Instantiate("cs1", fmi2CoSimulation, kToken, "", &callbacks, 0, 0);
  ASSERT_NE(c, nullptr);
  const fmi2ValueReference k = vr("k"), x = vr("x");
  fmi2Real value = 0.0;
  EXPECT_EQ(fmi2DoStep(c, 0.0, 0.1, 1), fmi2Error);
  EXPECT_TRUE(logged("cs1 [logStatusError] 3: doStep: not allowed in instantiated"));
  ASSERT_EQ(fmi2SetupExperiment(c, 0, 0.0, 0.0, 1, 2.0), fmi2OK);
  ASSERT_EQ(fmi2EnterInitializationMode(c), fmi2OK);
  ASSERT_EQ(fmi2ExitInitializationMode(c), fmi2OK);
  for (int n = 0; n < 20; ++n) ASSERT_EQ(fmi2DoStep(c, 0.05 * n, 0.05, 1), fmi2OK);
  ASSERT_EQ(fmi2GetReal(c, &x, 1, &value), fmi2OK);
  EXPECT_NEAR(value, std::cos(2.0), 1e-5);
  fmi2Real t = 0.0;
  ASSERT_EQ(fmi2GetRealStatus(c, fmi2LastSuccessfulTime, &t), fmi2OK);
  EXPECT_NEAR(t, 1.0, 1e-12);
  fmi2Status st = fmi2OK;
  EXPECT_EQ(fmi2GetStatus(c, fmi2DoStepStatus, &st), fmi2Discard);
  fmi2Integer i = 0;
  EXPECT_EQ(fmi2GetInteger(c, &x, 1, &i), fmi2Error);
  EXPECT_EQ(fmi2DoStep(c, 0.3, 0.05, 1), fmi2Error);
  // FMU state through bytes
  fmi2FMUstate s = nullptr;
  ASSERT_EQ(fmi2GetFMUstate(c, &s), fmi2OK);
  size_t size = 0;
  ASSERT_EQ(fmi2SerializedFMUstateSize(c, s, &size), fmi2OK);
  std::vector<fmi2Byte> bytes(size);
  ASSERT_EQ(fmi2SerializeFMUstate(c, s, bytes.data(), size), fmi2OK);
  ASSERT_EQ(fmi2FreeFMUstate(c, &s), fmi2OK);
  ASSERT_EQ(fmi2DoStep(c, 1.0, 0.5, 1), fmi2OK);
  fmi2Real a = 0.0, b = 0.0;
  ASSERT_EQ(fmi2GetReal(c, &x, 1, &a), fmi2OK);
  ASSERT_EQ(fmi2DeSerializeFMUstate(c, bytes.data(), size, &s), fmi2OK);
  ASSERT_EQ(fmi2SetFMUstate(c, s), fmi2OK);
  ASSERT_EQ(fmi2DoStep(c, 1.0, 0.5, 1), fmi2OK);
  ASSERT_EQ(fmi2GetReal(c, &x, 1, &b), fmi2OK);
  EXPECT_EQ(a, b);
  ASSERT_EQ(fmi2Terminate(c), fmi2OK);
  ASSERT_EQ(fmi2Reset(c), fmi2OK);
  // a parameter before initialization
  const fmi2Real nine = 9.0;
  ASSERT_EQ(fmi2SetReal(c, &k, 1, &nine), fmi2OK) << (g_log.empty() ? "" : g_log.back());
  ASSERT_EQ(fmi2EnterInitializationMode(c), fmi2OK);
  ASSERT_EQ(fmi2ExitInitializationMode(c), fmi2OK);
  ASSERT_EQ(fmi2DoStep(c, 0.0, 1.0, 1), fmi2OK);
  ASSERT_EQ(fmi2GetReal(c, &x, 1, &value), fmi2OK);
  EXPECT_NEAR(value, std::cos(3.0), 1e-4);
  fmi2FreeInstance(c);
  // a freed or foreign handle is refused, never used
  EXPECT_EQ(fmi2DoStep(c, 1.0, 0.1, 1), fmi2Error);
  EXPECT_EQ(fmi2GetReal(nullptr, &x, 1, &value), fmi2Error);
  int junk = 0;
  EXPECT_EQ(fmi2Terminate(&junk), fmi2Error);
  fmi2FreeInstance(&junk);
  fmi2FreeInstance(nullptr);
}

TEST_F(FmuCapi, Fmi2ModelExchange) {
  fmi2Component c = fmi2Instantiate("me1", fmi2ModelExchange, kToken, "", &callbacks, 0, 1);
  ASSERT_NE(c, nullptr);
  ASSERT_EQ(fmi2EnterInitializationMode(c), fmi2OK);
  ASSERT_EQ(fmi2ExitInitializationMode(c), fmi2OK);
  fmi2EventInfo info{1, 1, 1, 1, 1, 1.0};
  ASSERT_EQ(fmi2NewDiscreteStates(c, &info), fmi2OK);
  EXPECT_EQ(info.newDiscreteStatesNeeded, 0);
  EXPECT_EQ(info.nextEventTimeDefined, 0);
  ASSERT_EQ(fmi2EnterContinuousTimeMode(c), fmi2OK);
  std::vector<fmi2Real> x(3), dx(3);
  ASSERT_EQ(fmi2GetContinuousStates(c, x.data(), 3), fmi2OK);
  EXPECT_EQ(x, (std::vector<fmi2Real>{1.0, 0.0, 1.0}));
  x = {0.5, 0.25, 2.0};
  ASSERT_EQ(fmi2SetTime(c, 0.1), fmi2OK);
  ASSERT_EQ(fmi2SetContinuousStates(c, x.data(), 3), fmi2OK);
  ASSERT_EQ(fmi2GetDerivatives(c, dx.data(), 3), fmi2OK);
  EXPECT_EQ(dx[0], 0.25);
  EXPECT_NEAR(dx[1], -2.0, 1e-14);
  EXPECT_NEAR(dx[2], -2.0, 1e-14);
  EXPECT_EQ(fmi2GetDerivatives(c, dx.data(), 2), fmi2Error);
  fmi2Boolean enter = 1, stop = 1;
  ASSERT_EQ(fmi2CompletedIntegratorStep(c, 1, &enter, &stop), fmi2OK);
  EXPECT_EQ(enter, 0);
  const fmi2ValueReference state_x = vr("x"), der2 = vr("der(x,2)");
  const fmi2Real seed = 1.0;
  fmi2Real sens = 0.0;
  ASSERT_EQ(fmi2GetDirectionalDerivative(c, &der2, 1, &state_x, 1, &seed, &sens), fmi2OK);
  EXPECT_NEAR(sens, -4.0, 1e-12);  // der(x,2) = -k x
  // x is a state, not a derivative
  EXPECT_EQ(fmi2GetDirectionalDerivative(c, &state_x, 1, &state_x, 1, &seed, &sens), fmi2Error);
  EXPECT_TRUE(logged("me1 [logStatusError] 3: fmi2GetDirectionalDerivative: directional"));
  EXPECT_EQ(fmi2SetDebugLogging(c, 1, 0, nullptr), fmi2OK);
  fmi2FreeInstance(c);
}

TEST_F(FmuCapi, Fmi3CoSimulationAndModelExchange) {
  EXPECT_STREQ(fmi3GetVersion(), "3.0");
  static char env[] = "importer";
  EXPECT_EQ(fmi3InstantiateScheduledExecution("se", kToken, "", false, false, env, log3, nullptr,
                                              nullptr, nullptr),
            nullptr);
  EXPECT_TRUE(logged("scheduled execution"));
  fmi3Instance c = fmi3InstantiateCoSimulation("cs3", kToken, "", false, false, false, false,
                                               nullptr, 0, env, log3, nullptr);
  ASSERT_NE(c, nullptr);
  ASSERT_EQ(fmi3EnterInitializationMode(c, true, 1e-6, 0.0, true, 5.0), fmi3OK);
  ASSERT_EQ(fmi3ExitInitializationMode(c), fmi3OK);
  fmi3Boolean event = true, stop = true, early = true;
  fmi3Float64 last = 0.0;
  ASSERT_EQ(fmi3DoStep(c, 0.0, 0.5, false, &event, &stop, &early, &last), fmi3OK);
  EXPECT_FALSE(event || stop || early);
  EXPECT_EQ(last, 0.5);
  const fmi3ValueReference x = vr("x"), e = vr("e");
  fmi3Float64 values[2] = {0, 0};
  const fmi3ValueReference both[2] = {x, e};
  ASSERT_EQ(fmi3GetFloat64(c, both, 2, values, 2), fmi3OK);
  EXPECT_NEAR(values[0], std::cos(1.0), 1e-5);
  EXPECT_NEAR(values[1], 1.0, 1e-4);
  EXPECT_EQ(fmi3GetFloat64(c, both, 2, values, 1), fmi3Error);
  fmi3Int32 ints[1];
  EXPECT_EQ(fmi3GetInt32(c, &x, 1, ints, 1), fmi3Error);
  EXPECT_TRUE(logged("importer [logStatusError] 3: cs3: fmi3GetInt32"));
  fmi3Float64 seed = 1.0, sens = 0.0;
  EXPECT_EQ(fmi3GetAdjointDerivative(c, &x, 1, &x, 1, &seed, 1, &sens, 1), fmi3Error);
  // a step beyond the stop time
  EXPECT_EQ(fmi3DoStep(c, 0.5, 10.0, false, &event, &stop, &early, &last), fmi3Error);
  ASSERT_EQ(fmi3Terminate(c), fmi3OK);
  fmi3FreeInstance(c);

  fmi3Instance m = fmi3InstantiateModelExchange("me3", kToken, "", false, false, env, log3);
  ASSERT_NE(m, nullptr);
  size_t n = 0;
  ASSERT_EQ(fmi3GetNumberOfContinuousStates(m, &n), fmi3OK);
  EXPECT_EQ(n, 3u);
  ASSERT_EQ(fmi3EnterInitializationMode(m, false, 0.0, 0.0, false, 0.0), fmi3OK);
  ASSERT_EQ(fmi3ExitInitializationMode(m), fmi3OK);
  fmi3Boolean flags[5] = {true, true, true, true, true};
  fmi3Float64 next = 1.0;
  ASSERT_EQ(
      fmi3UpdateDiscreteStates(m, &flags[0], &flags[1], &flags[2], &flags[3], &flags[4], &next),
      fmi3OK);
  EXPECT_FALSE(flags[0] || flags[1] || flags[2] || flags[3] || flags[4]);
  ASSERT_EQ(fmi3EnterContinuousTimeMode(m), fmi3OK);
  const fmi3Float64 s[3] = {1.0, 0.0, 3.0};
  fmi3Float64 d[3];
  ASSERT_EQ(fmi3SetContinuousStates(m, s, 3), fmi3OK);
  ASSERT_EQ(fmi3GetContinuousStateDerivatives(m, d, 3), fmi3OK);
  EXPECT_NEAR(d[1], -4.0, 1e-14);
  EXPECT_NEAR(d[2], -3.0, 1e-14);
  fmi3FreeInstance(m);
  EXPECT_EQ(fmi3Terminate(m), fmi3Error);
}

}  // namespace
}  // namespace mbs
