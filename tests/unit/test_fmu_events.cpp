// Model exchange of models with events (docs/fmu.md, "Model exchange"). An FMU exported in this
// process is loaded with dlopen and driven by an importer loop written here from the FMI 2.0 and
// 3.0 documents: classic Runge-Kutta with a fixed step; a sign change of an event indicator over
// a step is located by regula falsi (every other trial a bisection) on steps of the method from
// the step's start, to 1e-12; at the located point (where the indicator has changed sign)
// completedIntegratorStep, event mode with fmi2NewDiscreteStates / fmi3UpdateDiscreteStates
// until no new discrete states are needed, and back to continuous time. Checked: a bouncing ball
// (its bounce times, velocities and heights against the closed form, which the method
// integrates exactly, and its discrete bounce counter), a spring stop that acts only when x < 0
// (a switch: its indicator crosses at contact and at release, against the closed form), and the
// model descriptions (event indicators, discrete variables) against the official schemas.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <numbers>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/driver/Compile.h"
#include "tests/unit/fmu_test_util.h"
#include "tools/fmu/Archive.h"
#include "tools/fmu/Export.h"
#include "tools/fmu/blob/Fmi2Types.h"
#include "tools/fmu/blob/Fmi3Types.h"

namespace mbs::fmu {
namespace {

namespace fs = std::filesystem;
using testutil::TempDir;

const char* const kBall = R"(model Ball
  parameter Real e = 0.8, g = 9.81;
  Real h(start = 1, fixed = true), v(start = 0, fixed = true);
  Integer n(start = 0) "bounces so far";
equation
  der(h) = v;
  der(v) = -g;
  when h < 0 then
    reinit(v, -e * pre(v));
    n = pre(n) + 1;
  end when;
end Ball;
)";

// Free flight at v = -1 until x = 0 (t = 0.5), then a spring k = 100 (w = 10) until it lets go
// at t = 0.5 + pi/10 with v = +1.
const char* const kStop = R"(model Stop
  parameter Real k = 100;
  Real x(start = 0.5, fixed = true), v(start = -1, fixed = true);
equation
  der(x) = v;
  der(v) = if x < 0 then -k * x else 0;
end Stop;
)";

std::string attribute(const std::string& element, const std::string& name) {
  const std::string key = " " + name + "=\"";
  const size_t at = element.find(key);
  if (at == std::string::npos) return {};
  const size_t start = at + key.size();
  return element.substr(start, element.find('"', start) - start);
}

// The element of the variable `name` in the description (up to its '>').
std::string variable_element(const std::string& xml, const std::string& name) {
  const size_t at = xml.find("name=\"" + name + "\"");
  if (at == std::string::npos) return {};
  const size_t open = xml.rfind('<', at);
  return xml.substr(open, xml.find('>', at) - open);
}

// An FMU of `source` for model exchange, exported in this process, unpacked: its library, its
// model description (validated against the official schema) and value references by name.
struct Exported {
  TempDir dir;
  int version = 2;
  std::string xml, token;
  fs::path library;
  std::map<std::string, unsigned> vr;
  std::set<unsigned> integers;  // the value references of Integer (Int32) variables
};

void export_me(const std::string& name, const std::string& source, int version,
               const std::vector<std::string>& outputs, Exported& x) {
  x.version = version;
  CompileOptions co;
  co.file = (x.dir.path / (name + ".mbs")).string();
  std::ofstream(co.file) << source;
  co.cache_dir = "off";
  co.cpu = kDefaultFmuCpu;
  co.keep_object_files = true;
  std::ostringstream emit, diag;
  CompileResult r = compile(co, emit, diag);
  ASSERT_TRUE(r.ok) << diag.str();
  ExportOptions o;
  o.path = (x.dir.path / (name + ".fmu")).string();
  o.version = version == 3 ? FmiVersion::V3 : FmiVersion::V2;
  o.co_simulation = false;
  o.model_exchange = true;
  o.outputs = outputs;
  o.outputs_given = true;
  o.sources = SourcePlacement::None;
  o.cpu = kDefaultFmuCpu;
  ExportReport report;
  ASSERT_EQ(export_fmu(*r.model, r.object_files, o, &report), "");
  x.token = report.token;
  std::vector<ArchiveEntry> entries;
  ASSERT_EQ(read_archive(o.path, entries), "");
  for (const ArchiveEntry& e : entries) {
    if (e.name == "modelDescription.xml") x.xml = e.bytes;
    if (e.name.size() > 3 && e.name.compare(e.name.size() - 3, 3, ".so") == 0) {
      x.library = x.dir.path / fs::path(e.name).filename();
      std::ofstream(x.library, std::ios::binary) << e.bytes;
    }
  }
  ASSERT_FALSE(x.xml.empty());
  ASSERT_FALSE(x.library.empty());
  // FMI 3: Float64, Int32 and Boolean elements; FMI 2: ScalarVariable with Real, Integer or
  // Boolean inside (the Integer ones are read with fmi2GetInteger / fmi3GetInt32)
  for (const char* tag : version == 3
                             ? std::vector<const char*>{"<Float64 ", "<Int32 ", "<Boolean "}
                             : std::vector<const char*>{"<ScalarVariable "}) {
    for (size_t at = x.xml.find(tag); at != std::string::npos; at = x.xml.find(tag, at + 1)) {
      const size_t end = x.xml.find('>', at);
      const std::string element = x.xml.substr(at, end - at);
      const auto vr = static_cast<unsigned>(std::stoul(attribute(element, "valueReference")));
      x.vr[attribute(element, "name")] = vr;
      if (std::string(tag) == "<Int32 " || x.xml.compare(x.xml.find('<', end), 8, "<Integer") == 0)
        x.integers.insert(vr);
    }
  }
  const fs::path xml_path = x.dir.path / "modelDescription.xml";
  std::ofstream(xml_path) << x.xml;
  const std::string schema =
      std::string(MBS_SOURCE_DIR) + "/tests/fmi/schema/" +
      (version == 3 ? "fmi3/fmi3ModelDescription.xsd" : "fmi2/fmi2ModelDescription.xsd");
  const std::string out = testutil::command_output("xmllint --noout --schema '" + schema + "' '" +
                                                   xml_path.string() + "' 2>&1; echo rc=$?");
  EXPECT_NE(out.find("rc=0"), std::string::npos) << out;
}

void log2(fmi2ComponentEnvironment env, fmi2String, fmi2Status, fmi2String, fmi2String message,
          ...) {
  static_cast<std::vector<std::string>*>(env)->push_back(message ? message : "");
}

void log3(fmi3InstanceEnvironment env, fmi3Status, fmi3String, fmi3String message) {
  static_cast<std::vector<std::string>*>(env)->push_back(message ? message : "");
}

template <class F>
F symbol(void* lib, const char* name) {
  void* p = dlsym(lib, name);
  EXPECT_NE(p, nullptr) << name;
  return reinterpret_cast<F>(p);
}

// One model-exchange instance through the C functions of FMI 2 or FMI 3; every call returns
// whether the status was OK.
class MeInstance {
 public:
  MeInstance(const Exported& x, size_t nx, size_t nz)
      : version_(x.version), nx_(nx), nz_(nz), integers_(x.integers) {
    lib_ = dlopen(x.library.c_str(), RTLD_NOW | RTLD_LOCAL);
    EXPECT_NE(lib_, nullptr) << dlerror();
    if (!lib_) return;
    if (version_ == 2) {
      callbacks_ = fmi2CallbackFunctions{log2, nullptr, nullptr, nullptr, &log_};
      using Instantiate = fmi2Component (*)(fmi2String, fmi2Type, fmi2String, fmi2String,
                                            const fmi2CallbackFunctions*, fmi2Boolean, fmi2Boolean);
      c_ = symbol<Instantiate>(lib_, "fmi2Instantiate")("ball", fmi2ModelExchange, x.token.c_str(),
                                                        "", &callbacks_, 0, 0);
    } else {
      using Instantiate =
          fmi3Instance (*)(fmi3String, fmi3String, fmi3String, fmi3Boolean, fmi3Boolean,
                           fmi3InstanceEnvironment, fmi3LogMessageCallback);
      c_ = symbol<Instantiate>(lib_, "fmi3InstantiateModelExchange")("ball", x.token.c_str(), "",
                                                                     false, false, &log_, log3);
    }
    EXPECT_NE(c_, nullptr);
  }
  ~MeInstance() {
    if (c_) symbol<void (*)(void*)>(lib_, v("FreeInstance"))(c_);
    if (lib_) dlclose(lib_);
  }
  bool ok() const { return c_ != nullptr; }
  const std::vector<std::string>& log() const { return log_; }

  // Initialization at t0: setup, initialization mode, exit into event mode.
  bool initialize(double t0) {
    if (version_ == 2) {
      using Setup = int (*)(void*, int, double, double, int, double);
      return call<Setup>("fmi2SetupExperiment", 0, 0.0, t0, 0, 0.0) &&
             call<int (*)(void*)>("fmi2EnterInitializationMode") &&
             call<int (*)(void*)>("fmi2ExitInitializationMode");
    }
    using Enter = int (*)(void*, bool, double, double, bool, double);
    return call<Enter>("fmi3EnterInitializationMode", false, 0.0, t0, false, 0.0) &&
           call<int (*)(void*)>("fmi3ExitInitializationMode");
  }
  bool number_of_event_indicators(size_t& n) {
    return version_ == 2 ? (n = nz_, true)
                         : call<int (*)(void*, size_t*)>("fmi3GetNumberOfEventIndicators", &n);
  }
  bool enter_event_mode() { return call<int (*)(void*)>(v("EnterEventMode")); }
  bool enter_continuous_time_mode() { return call<int (*)(void*)>(v("EnterContinuousTimeMode")); }
  // One call of fmi2NewDiscreteStates / fmi3UpdateDiscreteStates.
  bool update_discrete_states(bool& more, bool& values_changed) {
    if (version_ == 2) {
      fmi2EventInfo info{};
      const bool ok = call<int (*)(void*, fmi2EventInfo*)>("fmi2NewDiscreteStates", &info);
      more = info.newDiscreteStatesNeeded != 0;
      values_changed = info.valuesOfContinuousStatesChanged != 0;
      EXPECT_EQ(info.terminateSimulation, 0);
      EXPECT_EQ(info.nextEventTimeDefined, 0);
      return ok;
    }
    bool flags[5] = {true, true, true, true, true};
    double next = -1.0;
    using Update = int (*)(void*, bool*, bool*, bool*, bool*, bool*, double*);
    const bool ok = call<Update>("fmi3UpdateDiscreteStates", &flags[0], &flags[1], &flags[2],
                                 &flags[3], &flags[4], &next);
    more = flags[0];
    values_changed = flags[3];
    EXPECT_FALSE(flags[1]);  // terminateSimulation
    EXPECT_FALSE(flags[4]);  // nextEventTimeDefined
    return ok;
  }
  bool set_time(double t) { return call<int (*)(void*, double)>(v("SetTime"), t); }
  bool set_states(const std::vector<double>& x) {
    return call<int (*)(void*, const double*, size_t)>(v("SetContinuousStates"), x.data(), nx_);
  }
  bool get_states(std::vector<double>& x) {
    x.resize(nx_);
    return call<int (*)(void*, double*, size_t)>(v("GetContinuousStates"), x.data(), nx_);
  }
  bool derivatives(std::vector<double>& dx) {
    dx.resize(nx_);
    return call<int (*)(void*, double*, size_t)>(
        version_ == 2 ? "fmi2GetDerivatives" : "fmi3GetContinuousStateDerivatives", dx.data(), nx_);
  }
  bool indicators(std::vector<double>& z) {
    z.resize(nz_);
    return call<int (*)(void*, double*, size_t)>(v("GetEventIndicators"), z.data(), nz_);
  }
  bool completed_integrator_step(bool& enter) {
    if (version_ == 2) {
      int e = 0, stop = 0;
      const bool ok =
          call<int (*)(void*, int, int*, int*)>("fmi2CompletedIntegratorStep", 1, &e, &stop);
      enter = e != 0;
      return ok && stop == 0;
    }
    bool e = false, stop = false;
    const bool ok =
        call<int (*)(void*, bool, bool*, bool*)>("fmi3CompletedIntegratorStep", true, &e, &stop);
    enter = e;
    return ok && !stop;
  }
  // A variable's value; an Integer one through fmi2GetInteger / fmi3GetInt32.
  bool get(unsigned vr, double& value) {
    if (integers_.count(vr)) {
      int32_t i = -1;
      const bool ok = version_ == 2
                          ? call<int (*)(void*, const unsigned*, size_t, int32_t*)>(
                                "fmi2GetInteger", &vr, size_t{1}, &i)
                          : call<int (*)(void*, const unsigned*, size_t, int32_t*, size_t)>(
                                "fmi3GetInt32", &vr, size_t{1}, &i, size_t{1});
      value = i;
      return ok;
    }
    if (version_ == 2)
      return call<int (*)(void*, const unsigned*, size_t, double*)>("fmi2GetReal", &vr, size_t{1},
                                                                    &value);
    return call<int (*)(void*, const unsigned*, size_t, double*, size_t)>(
        "fmi3GetFloat64", &vr, size_t{1}, &value, size_t{1});
  }
  bool terminate() { return call<int (*)(void*)>(v("Terminate")); }

 private:
  const char* v(const char* fn) {
    name_ = (version_ == 2 ? "fmi2" : "fmi3") + std::string(fn);
    return name_.c_str();
  }
  template <class F, class... A>
  bool call(const char* fn, A... args) {
    if (!c_) return false;
    const int status = symbol<F>(lib_, fn)(c_, args...);
    EXPECT_EQ(status, 0) << fn << (log_.empty() ? std::string() : ": " + log_.back());
    return status == 0;
  }

  int version_;
  size_t nx_, nz_;
  std::set<unsigned> integers_;
  void* lib_ = nullptr;
  void* c_ = nullptr;
  std::vector<std::string> log_;
  std::string name_;
  fmi2CallbackFunctions callbacks_{};
};

// What the importer saw: every event mode entered after a located crossing or a step event.
struct Event {
  double t = 0.0;
  std::vector<double> before, after;  // the continuous states
  bool values_changed = false;
  std::vector<double> discrete_before, discrete_after;  // the variables `watch`
};

struct ImportRun {
  std::vector<Event> events;
  std::vector<double> x;  // at the end
  double t = 0.0;
  size_t located = 0;  // trial steps of the location
};

// The event mode of the importer: update until no new discrete states are needed, the states
// again if they changed, back to continuous time.
bool event_iteration(MeInstance& f, std::vector<double>& x, bool& values_changed) {
  values_changed = false;
  for (int k = 0;; ++k) {
    bool more = false, changed = false;
    if (!f.update_discrete_states(more, changed)) return false;
    values_changed |= changed;
    if (!more) break;
    if (k == 100) return false;
  }
  if (values_changed && !f.get_states(x)) return false;
  return f.enter_continuous_time_mode();
}

// One classic Runge-Kutta step of length s from (t, x).
bool rk4(MeInstance& f, double t, const std::vector<double>& x, double s,
         std::vector<double>& out) {
  const size_t n = x.size();
  std::vector<double> k1, k2, k3, k4, y(n);
  auto eval = [&](double at, const std::vector<double>& state, std::vector<double>& d) {
    return f.set_time(at) && f.set_states(state) && f.derivatives(d);
  };
  if (!eval(t, x, k1)) return false;
  for (size_t i = 0; i < n; ++i) y[i] = x[i] + 0.5 * s * k1[i];
  if (!eval(t + 0.5 * s, y, k2)) return false;
  for (size_t i = 0; i < n; ++i) y[i] = x[i] + 0.5 * s * k2[i];
  if (!eval(t + 0.5 * s, y, k3)) return false;
  for (size_t i = 0; i < n; ++i) y[i] = x[i] + s * k3[i];
  if (!eval(t + s, y, k4)) return false;
  out.resize(n);
  for (size_t i = 0; i < n; ++i) out[i] = x[i] + s / 6.0 * (k1[i] + 2 * k2[i] + 2 * k3[i] + k4[i]);
  return true;
}

// The first indicator whose sign differs between a and b, or -1.
int sign_change(const std::vector<double>& a, const std::vector<double>& b) {
  for (size_t k = 0; k < a.size(); ++k)
    if ((a[k] < 0.0) != (b[k] < 0.0)) return static_cast<int>(k);
  return -1;
}

// Runs from t = 0 to t_end with steps h; the values of `watch` (value references) are read
// before and after every event.
ImportRun run_model_exchange(MeInstance& f, double t_end, double h,
                             const std::vector<unsigned>& watch) {
  ImportRun run;
  auto read = [&](std::vector<double>& into) {
    into.assign(watch.size(), 0.0);
    for (size_t k = 0; k < watch.size(); ++k) EXPECT_TRUE(f.get(watch[k], into[k]));
  };
  std::vector<double> x, z, xn, zn, xs, zs;
  bool changed = false;
  if (!f.initialize(0.0) || !event_iteration(f, x, changed) || !f.get_states(x) ||
      !f.indicators(z)) {
    ADD_FAILURE() << "initialization";
    return run;
  }
  double t = 0.0;
  const double tol = 1e-12;
  while (t < t_end - 1e-9) {
    double step = std::min(h, t_end - t);
    if (!rk4(f, t, x, step, xn) || !f.set_time(t + step) || !f.set_states(xn) ||
        !f.indicators(zn)) {
      ADD_FAILURE() << "step at t = " << t;
      return run;
    }
    bool crossing = sign_change(z, zn) >= 0;
    if (crossing) {
      // [lo, hi] brackets the first sign change; trials are steps of the method from t
      double lo = 0.0, hi = step;
      std::vector<double> zlo = z;
      for (int trial = 0; hi - lo > tol * std::max(1.0, std::fabs(t)); ++trial) {
        const int k = sign_change(zlo, zn);
        double s = lo - zlo[k] * (hi - lo) / (zn[k] - zlo[k]);
        if (trial % 2 == 1 || !(s > lo && s < hi)) s = 0.5 * (lo + hi);
        if (!rk4(f, t, x, s, xs) || !f.set_time(t + s) || !f.set_states(xs) || !f.indicators(zs))
          return run;
        ++run.located;
        if (sign_change(z, zs) >= 0) {
          hi = s;
          xn = xs;
          zn = zs;
        } else {
          lo = s;
          zlo = zs;
        }
      }
      step = hi;
    }
    t += step;
    x = xn;
    bool enter = false;
    if (!f.set_time(t) || !f.set_states(x) || !f.completed_integrator_step(enter)) return run;
    if (crossing || enter) {
      Event e;
      e.t = t;
      e.before = x;
      read(e.discrete_before);
      if (!f.enter_event_mode() || !event_iteration(f, x, e.values_changed)) {
        ADD_FAILURE() << "event at t = " << t;
        return run;
      }
      e.after = x;
      read(e.discrete_after);
      run.events.push_back(std::move(e));
      if (!f.indicators(zn)) return run;
    }
    z = zn;
  }
  run.x = x;
  run.t = t;
  EXPECT_TRUE(f.terminate());
  return run;
}

class FmuEvents : public testing::TestWithParam<int> {};

// The bouncing ball: its indicator is h, the crossings of h < 0 are bounces (v jumps to -e v,
// the counter n counts them), those of h rising through 0 right after each bounce fire nothing.
// Free fall is a quadratic, which the method integrates exactly: the bounce times, the speeds
// and the heights reached follow the closed form to the location tolerance.
TEST_P(FmuEvents, BouncingBallBouncesAtTheClosedFormTimesAndCountsTheBounces) {
  const int version = GetParam();
  Exported x;
  export_me("ball", kBall, version, {"n"}, x);
  ASSERT_TRUE(x.vr.count("n") && x.vr.count("h") && x.vr.count("v"));
  // one event indicator; n is discrete (in both versions, with no start: it is calculated)
  const std::string n_element = variable_element(x.xml, "n");
  EXPECT_EQ(attribute(n_element, "variability"), "discrete") << n_element;
  EXPECT_EQ(attribute(n_element, "causality"), "output") << n_element;
  EXPECT_EQ(attribute(variable_element(x.xml, "h"), "variability"), "continuous");
  if (version == 2) {
    EXPECT_NE(x.xml.find("numberOfEventIndicators=\"1\""), std::string::npos) << x.xml;
  } else {
    ASSERT_TRUE(x.vr.count("_eventIndicator[1]"));
    EXPECT_NE(x.xml.find("<EventIndicator valueReference=\"" +
                         std::to_string(x.vr.at("_eventIndicator[1]")) + "\"/>"),
              std::string::npos)
        << x.xml;
  }
  MeInstance f(x, 2, 1);
  ASSERT_TRUE(f.ok());
  size_t nz = 0;
  ASSERT_TRUE(f.number_of_event_indicators(nz));
  EXPECT_EQ(nz, 1u);
  const ImportRun run =
      run_model_exchange(f, 2.5, 1e-3, {x.vr.at("n"), x.vr.at("h"), x.vr.at("v")});
  ASSERT_FALSE(run.x.empty());
  std::vector<const Event*> bounces;
  for (const Event& e : run.events)
    if (e.values_changed) bounces.push_back(&e);
  ASSERT_EQ(bounces.size(), 4u);
  // every other event is h rising through 0 just after a bounce: nothing changes
  EXPECT_EQ(run.events.size(), 8u);
  const double g = 9.81, e = 0.8, h0 = 1.0;
  double t_hit = std::sqrt(2.0 * h0 / g), v_hit = -g * t_hit;
  for (size_t k = 0; k < bounces.size(); ++k) {
    const Event& b = *bounces[k];
    SCOPED_TRACE("bounce " + std::to_string(k + 1));
    EXPECT_NEAR(b.t, t_hit, 1e-10);
    EXPECT_LE(b.before[0], 0.0);  // located where h < 0 holds
    EXPECT_NEAR(b.before[1], v_hit, 1e-9);
    EXPECT_NEAR(b.after[1], -e * v_hit, 1e-9);
    EXPECT_EQ(b.after[1], -e * b.before[1]);  // reinit(v, -e*pre(v)) from the value before
    EXPECT_EQ(b.after[0], b.before[0]);
    // the height the ball reaches after it: e^(2k) h0
    EXPECT_NEAR(b.after[0] + b.after[1] * b.after[1] / (2 * g), std::pow(e, 2.0 * (k + 1)) * h0,
                1e-9);
    // the counter: k before the event, k + 1 after; the outputs h and v follow the states
    EXPECT_EQ(b.discrete_before[0], static_cast<double>(k));
    EXPECT_EQ(b.discrete_after[0], static_cast<double>(k + 1));
    EXPECT_EQ(b.discrete_after[2], b.after[1]);
    v_hit = e * v_hit;
    t_hit += -2.0 * v_hit / g;
  }
  for (const Event& ev : run.events) {
    if (!ev.values_changed) {
      EXPECT_EQ(ev.discrete_after, ev.discrete_before) << "t = " << ev.t;
    }
  }
  double n_end = -1.0;
  ASSERT_TRUE(f.get(x.vr.at("n"), n_end));
  EXPECT_EQ(n_end, 4.0);
  EXPECT_GT(run.located, 0u);
}

// A switch: der(v) = if x < 0 then -k x else 0. Its crossing function x is the only event
// indicator; the importer stops at contact and at release, nothing is reinitialised, and the
// motion follows the closed form (contact at t = 0.5, release after half a period pi/w with the
// speed reversed; RK4 at h = 1e-3 gets the release time and the final state to some 3e-11).
// Without the indicators the step across each switch would be off by O(h).
TEST_P(FmuEvents, SwitchOfASpringStopIsAnEventIndicatorThatCrossesAtContactAndRelease) {
  const int version = GetParam();
  Exported x;
  export_me("stop", kStop, version, {}, x);
  if (version == 2)
    EXPECT_NE(x.xml.find("numberOfEventIndicators=\"1\""), std::string::npos) << x.xml;
  else
    EXPECT_NE(x.xml.find("<EventIndicator "), std::string::npos) << x.xml;
  MeInstance f(x, 2, 1);
  ASSERT_TRUE(f.ok());
  const ImportRun run = run_model_exchange(f, 1.5, 1e-3, {});
  ASSERT_FALSE(run.x.empty());
  ASSERT_EQ(run.events.size(), 2u);
  const double w = 10.0, t_contact = 0.5, t_release = 0.5 + std::numbers::pi / w;
  EXPECT_NEAR(run.events[0].t, t_contact, 1e-10);
  EXPECT_NEAR(run.events[1].t, t_release, 1e-9);
  for (const Event& e : run.events) {
    EXPECT_FALSE(e.values_changed);
    EXPECT_EQ(e.after, e.before);
  }
  EXPECT_NEAR(run.events[0].before[1], -1.0, 1e-12);
  EXPECT_NEAR(run.events[1].before[1], 1.0, 1e-9);
  EXPECT_NEAR(run.t, 1.5, 1e-12);
  EXPECT_NEAR(run.x[1], 1.0, 1e-9);
  EXPECT_NEAR(run.x[0], 1.5 - t_release, 1e-9);
}

// A clock: u = -K x at every instant of sample(0, T). The instant at t = 0 fires at the end of
// initialization (u = -K x0, k = 1), the others are crossings of the one indicator the clock
// adds, and x after each follows the exact recursion of the zero-order hold,
// x_{k+1} = (e^{-aT} - K (1 - e^{-aT})/a) x_k (RK4 at h = 1e-3 on an exponential: 1e-12).
TEST_P(FmuEvents, SampleIsAClockWhoseInstantsAreEventIndicators) {
  const int version = GetParam();
  Exported x;
  export_me("clock", R"(model Clock
  parameter Real a = 1, K = 2, T = 0.1;
  Real x(start = 1, fixed = true);
  discrete Real u;
  Integer k;
equation
  der(x) = -a * x + u;
  when sample(0, T) then
    k = pre(k) + 1;
    u = -K * x;
  end when;
end Clock;
)",
            version, {"u", "k"}, x);
  ASSERT_TRUE(x.vr.count("u") && x.vr.count("k"));
  EXPECT_EQ(x.vr.count("$sample1.count"), 0u) << "the clock's counters are not variables";
  MeInstance f(x, 1, 1);
  ASSERT_TRUE(f.ok());
  const ImportRun run = run_model_exchange(f, 0.55, 1e-3, {x.vr.at("u"), x.vr.at("k")});
  ASSERT_FALSE(run.x.empty());
  ASSERT_EQ(run.events.size(), 5u);
  const double a = 1, K = 2, T = 0.1, phi = std::exp(-a * T), gamma = (1 - phi) / a;
  double xk = 1.0;
  EXPECT_EQ(run.events[0].discrete_before[0], -K);  // fired at initialization
  EXPECT_EQ(run.events[0].discrete_before[1], 1.0);
  for (size_t i = 0; i < run.events.size(); ++i) {
    const Event& e = run.events[i];
    SCOPED_TRACE("instant " + std::to_string(i + 1));
    xk = (phi - gamma * K) * xk;
    EXPECT_NEAR(e.t, static_cast<double>(i + 1) * T, 1e-10);
    EXPECT_NEAR(e.before[0], xk, 1e-11);
    EXPECT_FALSE(e.values_changed);
    EXPECT_EQ(e.discrete_after[1], static_cast<double>(i + 2));
    EXPECT_NEAR(e.discrete_after[0], -K * e.before[0], 1e-15);
  }
}

INSTANTIATE_TEST_SUITE_P(Fmi, FmuEvents, testing::Values(2, 3),
                         [](const testing::TestParamInfo<int>& i) {
                           return "Fmi" + std::to_string(i.param);
                         });

}  // namespace
}  // namespace mbs::fmu
