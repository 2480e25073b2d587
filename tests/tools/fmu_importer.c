/* A minimal FMU importer, written from the FMI 2.0 and 3.0 specifications (the call sequences of
 * their chapters "Co-Simulation" and "Model Exchange"), with its own declarations of the types
 * and functions it uses. It loads an unpacked FMU's shared library with dlopen, runs it from the
 * start time to T_STOP in communication steps (co-simulation) or integrates it with the classic
 * Runge-Kutta method of its own (model exchange), and writes the recorded variables as CSV.
 * tests/unit/test_fmu_end_to_end.cpp compares its results with `mbsc --simulate`.
 *
 *   fmu_importer LIBRARY VERSION TYPE TOKEN T_STOP H OUT.csv [options]
 *     VERSION 2|3, TYPE cs|me
 *     --vr N          record variable N (repeatable, in column order after time)
 *     --vri N         record the Integer variable N (fmi2GetInteger / fmi3GetInt32)
 *     --set N=X       set variable N to X before initialization
 *     --input N=A,B   an input u(t) = A + B t, set before each step at its start time
 *     --instances K   run K instances side by side (each step of each in turn); all must agree
 *     --state-check   at the middle communication point, get the FMU state (and a serialized
 *                     copy); at the end, go back to it and run the second half again twice: the
 *                     results must be identical
 *     --misuse        check that wrong calls return an error status (and do not crash)
 *     --expect-fail   the run must end with an error status of doStep (printed)
 *     --time          print the wall time of the stepping loop (steps and GetReal) in seconds
 *     --no-rows       write only the first and the last row (GetReal still every step)
 *     --euler         model exchange: explicit Euler instead of the classic Runge-Kutta method
 *     --indicators N  model exchange: the FMU's N event indicators are read after every step and
 *                     a state event is taken where one changed its domain by fmusim's rule (the
 *                     Reference FMUs' importer; FMI: between z > 0 and z <= 0),
 *                     pre_z <= 0 && z > 0 or pre_z > 0 && z <= 0, at the end of the step (no
 *                     location: the step should end on the zero); their number is printed
 * Model exchange: a step event the FMU asks for in completedIntegratorStep is handled (event
 * mode, discrete states, the states again); their number is printed at the end. As fmusim does,
 * completedIntegratorStep comes first, then the indicators; one event mode serves both.
 * Exit code 0 on success; 1 with a message on stderr otherwise. */
#include <dlfcn.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- FMI 2.0: the types of fmi2TypesPlatform.h and fmi2FunctionTypes.h */
typedef void* fmi2Component;
typedef void* fmi2ComponentEnvironment;
typedef void* fmi2FMUstate;
typedef unsigned int fmi2ValueReference;
typedef double fmi2Real;
typedef int fmi2Integer;
typedef int fmi2Boolean;
typedef const char* fmi2String;
typedef char fmi2Byte;
typedef enum { fmi2OK, fmi2Warning, fmi2Discard, fmi2Error, fmi2Fatal, fmi2Pending } fmi2Status;
typedef enum { fmi2ModelExchange, fmi2CoSimulation } fmi2Type;
typedef struct {
  void (*logger)(fmi2ComponentEnvironment, fmi2String, fmi2Status, fmi2String, fmi2String, ...);
  void* (*allocateMemory)(size_t, size_t);
  void (*freeMemory)(void*);
  void (*stepFinished)(fmi2ComponentEnvironment, fmi2Status);
  fmi2ComponentEnvironment componentEnvironment;
} fmi2CallbackFunctions;
typedef struct {
  fmi2Boolean newDiscreteStatesNeeded, terminateSimulation, nominalsOfContinuousStatesChanged,
      valuesOfContinuousStatesChanged, nextEventTimeDefined;
  fmi2Real nextEventTime;
} fmi2EventInfo;

/* ---- FMI 3.0: the types of fmi3PlatformTypes.h and fmi3FunctionTypes.h */
typedef void* fmi3Instance;
typedef void* fmi3InstanceEnvironment;
typedef void* fmi3FMUState;
typedef uint32_t fmi3ValueReference;
typedef double fmi3Float64;
typedef int32_t fmi3Int32;
typedef bool fmi3Boolean;
typedef const char* fmi3String;
typedef uint8_t fmi3Byte;
typedef enum { fmi3OK, fmi3Warning, fmi3Discard, fmi3Error, fmi3Fatal } fmi3Status;
typedef void (*fmi3LogMessageCallback)(fmi3InstanceEnvironment, fmi3Status, fmi3String,
                                       fmi3String);
typedef void (*fmi3IntermediateUpdateCallback)(fmi3InstanceEnvironment, fmi3Float64, fmi3Boolean,
                                               fmi3Boolean, fmi3Boolean, fmi3Boolean,
                                               fmi3Boolean*, fmi3Float64*);

static void* lib;
static int version;
static bool me;
static const char* token;

static void die(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "fmu_importer: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  exit(1);
}

/* dlsym once per function: a small cache keyed by the name's text */
static void* sym(const char* name) {
  static const char* names[128];
  static void* found[128];
  static int n;
  for (int i = 0; i < n; ++i)
    if (names[i] == name) return found[i];
  for (int i = 0; i < n; ++i)
    if (strcmp(names[i], name) == 0) return found[i];
  void* f = dlsym(lib, name);
  if (!f) die("the library does not export %s", name);
  if (n < 128) {
    names[n] = name;
    found[n++] = f;
  }
  return f;
}
#define FN(type, name) ((type)sym(name))

static int log_count;
/* FMI 2's message is a printf format with its arguments */
static void logger2(fmi2ComponentEnvironment env, fmi2String instance, fmi2Status status,
                    fmi2String category, fmi2String message, ...) {
  (void)env;
  char text[4096];
  va_list ap;
  va_start(ap, message);
  vsnprintf(text, sizeof text, message, ap);
  va_end(ap);
  ++log_count;
  fprintf(stderr, "[%s] status %d %s: %s\n", instance, (int)status, category, text);
}
static void logger3(fmi3InstanceEnvironment env, fmi3Status status, fmi3String category,
                    fmi3String message) {
  ++log_count;
  fprintf(stderr, "[%s] status %d %s: %s\n", (const char*)env, (int)status, category, message);
}
static fmi2CallbackFunctions callbacks2 = {logger2, calloc, free, NULL, NULL};

/* ---- one instance, whatever the version and type */
typedef struct {
  void* c;
  char name[32];
  double t;
  size_t nx;
  double *x, *k[4], *xs;
  long events;       /* model exchange: step events the FMU asked for */
  long state_events; /* model exchange: indicators that changed their domain (--indicators) */
  size_t nz;
  double *z, *pre_z;
} Inst;

static bool euler;

static int status_of(int s) { return s; }

static void check(int status, const char* what) {
  if (status_of(status) > 1) die("%s returned status %d", what, status);
}

static void instantiate(Inst* in, int index) {
  snprintf(in->name, sizeof in->name, "inst%d", index);
  if (version == 2) {
    in->c = FN(fmi2Component(*)(fmi2String, fmi2Type, fmi2String, fmi2String,
                                const fmi2CallbackFunctions*, fmi2Boolean, fmi2Boolean),
               "fmi2Instantiate")(in->name, me ? fmi2ModelExchange : fmi2CoSimulation, token,
                                  "file:///nonexistent/resources", &callbacks2, 0, 1);
  } else if (me) {
    in->c = FN(fmi3Instance(*)(fmi3String, fmi3String, fmi3String, fmi3Boolean, fmi3Boolean,
                               fmi3InstanceEnvironment, fmi3LogMessageCallback),
               "fmi3InstantiateModelExchange")(in->name, token, "/nonexistent/resources/", false,
                                               true, in->name, logger3);
  } else {
    in->c = FN(fmi3Instance(*)(fmi3String, fmi3String, fmi3String, fmi3Boolean, fmi3Boolean,
                               fmi3Boolean, fmi3Boolean, const fmi3ValueReference*, size_t,
                               fmi3InstanceEnvironment, fmi3LogMessageCallback,
                               fmi3IntermediateUpdateCallback),
               "fmi3InstantiateCoSimulation")(in->name, token, "/nonexistent/resources/", false,
                                              true, false, false, NULL, 0, in->name, logger3,
                                              NULL);
  }
  if (!in->c) die("instantiation of %s failed", in->name);
}

static void set_reals(Inst* in, const unsigned* vr, size_t n, const double* v) {
  if (version == 2)
    check(FN(fmi2Status(*)(fmi2Component, const fmi2ValueReference*, size_t, const fmi2Real*),
             "fmi2SetReal")(in->c, vr, n, v),
          "fmi2SetReal");
  else
    check(FN(fmi3Status(*)(fmi3Instance, const fmi3ValueReference*, size_t, const fmi3Float64*,
                           size_t),
             "fmi3SetFloat64")(in->c, vr, n, v, n),
          "fmi3SetFloat64");
}

static int get_reals(Inst* in, const unsigned* vr, size_t n, double* v) {
  if (version == 2)
    return FN(fmi2Status(*)(fmi2Component, const fmi2ValueReference*, size_t, fmi2Real*),
              "fmi2GetReal")(in->c, vr, n, v);
  return FN(fmi3Status(*)(fmi3Instance, const fmi3ValueReference*, size_t, fmi3Float64*, size_t),
            "fmi3GetFloat64")(in->c, vr, n, v, n);
}

/* the recorded variables: Integer ones (is_int) one by one with their own function */
static int get_row(Inst* in, const unsigned* vr, const bool* is_int, size_t n, double* v) {
  bool any = false;
  for (size_t j = 0; j < n; ++j) any |= is_int[j];
  if (!any) return get_reals(in, vr, n, v);
  for (size_t j = 0; j < n; ++j) {
    int s;
    if (!is_int[j]) {
      s = get_reals(in, &vr[j], 1, &v[j]);
    } else {
      int32_t i = 0;
      s = version == 2 ? FN(fmi2Status(*)(fmi2Component, const fmi2ValueReference*, size_t,
                                          fmi2Integer*),
                            "fmi2GetInteger")(in->c, &vr[j], 1, &i)
                       : FN(fmi3Status(*)(fmi3Instance, const fmi3ValueReference*, size_t,
                                          fmi3Int32*, size_t),
                            "fmi3GetInt32")(in->c, &vr[j], 1, &i, 1);
      v[j] = i;
    }
    if (s > 1) return s;
  }
  return 0;
}

static void initialize(Inst* in, double t0, double t_stop) {
  if (version == 2) {
    check(FN(fmi2Status(*)(fmi2Component, fmi2Boolean, fmi2Real, fmi2Real, fmi2Boolean, fmi2Real),
             "fmi2SetupExperiment")(in->c, 0, 0.0, t0, 1, t_stop),
          "fmi2SetupExperiment");
    check(FN(fmi2Status(*)(fmi2Component), "fmi2EnterInitializationMode")(in->c),
          "fmi2EnterInitializationMode");
  } else {
    check(FN(fmi3Status(*)(fmi3Instance, fmi3Boolean, fmi3Float64, fmi3Float64, fmi3Boolean,
                           fmi3Float64),
             "fmi3EnterInitializationMode")(in->c, false, 0.0, t0, true, t_stop),
          "fmi3EnterInitializationMode");
  }
}

/* model exchange, in event mode: the discrete states until settled, then continuous-time mode;
 * returns whether the continuous states changed (get them again) */
static int event_iteration(Inst* in) {
  int changed = 0;
  if (version == 2) {
    fmi2EventInfo info;
    memset(&info, 0, sizeof info);
    info.newDiscreteStatesNeeded = 1;
    while (info.newDiscreteStatesNeeded) {
      check(FN(fmi2Status(*)(fmi2Component, fmi2EventInfo*), "fmi2NewDiscreteStates")(in->c, &info),
            "fmi2NewDiscreteStates");
      if (info.terminateSimulation) die("terminated in an event at t = %.17g", in->t);
      changed |= info.valuesOfContinuousStatesChanged;
    }
  } else {
    fmi3Boolean need = true, term = false, nominals = false, values = false, next_defined = false;
    fmi3Float64 next = 0;
    while (need) {
      check(FN(fmi3Status(*)(fmi3Instance, fmi3Boolean*, fmi3Boolean*, fmi3Boolean*, fmi3Boolean*,
                             fmi3Boolean*, fmi3Float64*),
               "fmi3UpdateDiscreteStates")(in->c, &need, &term, &nominals, &values, &next_defined,
                                           &next),
            "fmi3UpdateDiscreteStates");
      if (term) die("terminated in an event at t = %.17g", in->t);
      changed |= values;
    }
  }
  check(FN(int (*)(void*), version == 2 ? "fmi2EnterContinuousTimeMode"
                                        : "fmi3EnterContinuousTimeMode")(in->c),
        "EnterContinuousTimeMode");
  return changed;
}

static void exit_initialization(Inst* in) {
  check(FN(int (*)(void*), version == 2 ? "fmi2ExitInitializationMode"
                                        : "fmi3ExitInitializationMode")(in->c),
        "ExitInitializationMode");
  if (!me) return;
  /* the event iteration at the end of initialization, then continuous-time mode (the states are
   * read after this) */
  event_iteration(in);
  if (version == 3) {
    size_t n = 0;
    check(FN(fmi3Status(*)(fmi3Instance, size_t*), "fmi3GetNumberOfContinuousStates")(in->c, &n),
          "fmi3GetNumberOfContinuousStates");
    if (n != in->nx) die("fmi3GetNumberOfContinuousStates: %zu, the description says %zu", n, in->nx);
  }
}

/* ---- model exchange: the derivative of the FMU at (t, x) */
static void me_derivative(Inst* in, double t, const double* x, double* dx) {
  if (version == 2) {
    check(FN(fmi2Status(*)(fmi2Component, fmi2Real), "fmi2SetTime")(in->c, t), "fmi2SetTime");
    check(FN(fmi2Status(*)(fmi2Component, const fmi2Real*, size_t), "fmi2SetContinuousStates")(
              in->c, x, in->nx),
          "fmi2SetContinuousStates");
    check(FN(fmi2Status(*)(fmi2Component, fmi2Real*, size_t), "fmi2GetDerivatives")(in->c, dx,
                                                                                     in->nx),
          "fmi2GetDerivatives");
  } else {
    check(FN(fmi3Status(*)(fmi3Instance, fmi3Float64), "fmi3SetTime")(in->c, t), "fmi3SetTime");
    check(FN(fmi3Status(*)(fmi3Instance, const fmi3Float64*, size_t), "fmi3SetContinuousStates")(
              in->c, x, in->nx),
          "fmi3SetContinuousStates");
    check(FN(fmi3Status(*)(fmi3Instance, fmi3Float64*, size_t),
             "fmi3GetContinuousStateDerivatives")(in->c, dx, in->nx),
          "fmi3GetContinuousStateDerivatives");
  }
}

/* model exchange: an event (a step event the FMU asked for in completedIntegratorStep, e.g. a
 * rotation chart to move, or a state event): event mode, the discrete states until settled, the
 * states again if they changed, back to continuous-time mode */
static void me_event(Inst* in) {
  check(FN(int (*)(void*), version == 2 ? "fmi2EnterEventMode" : "fmi3EnterEventMode")(in->c),
        "EnterEventMode");
  if (event_iteration(in))
    check(FN(int (*)(void*, double*, size_t),
             version == 2 ? "fmi2GetContinuousStates" : "fmi3GetContinuousStates")(in->c, in->x,
                                                                                    in->nx),
          "GetContinuousStates");
}

/* model exchange: the event indicators at the FMU's current point into z */
static void get_indicators(Inst* in, double* z) {
  if (in->nz == 0) return;
  check(FN(int (*)(void*, double*, size_t),
           version == 2 ? "fmi2GetEventIndicators" : "fmi3GetEventIndicators")(in->c, z, in->nz),
        "GetEventIndicators");
}

/* one classic Runge-Kutta step of the importer's own */
static void me_step(Inst* in, double h) {
  size_t n = in->nx, i;
  double t = in->t;
  me_derivative(in, t, in->x, in->k[0]);
  if (euler) {
    for (i = 0; i < n; ++i) in->x[i] += h * in->k[0][i];
  } else {
  for (i = 0; i < n; ++i) in->xs[i] = in->x[i] + 0.5 * h * in->k[0][i];
  me_derivative(in, t + 0.5 * h, in->xs, in->k[1]);
  for (i = 0; i < n; ++i) in->xs[i] = in->x[i] + 0.5 * h * in->k[1][i];
  me_derivative(in, t + 0.5 * h, in->xs, in->k[2]);
  for (i = 0; i < n; ++i) in->xs[i] = in->x[i] + h * in->k[2][i];
  me_derivative(in, t + h, in->xs, in->k[3]);
  for (i = 0; i < n; ++i)
    in->x[i] += h / 6.0 * (in->k[0][i] + 2 * in->k[1][i] + 2 * in->k[2][i] + in->k[3][i]);
  }
  in->t = t + h;
  bool enter = false;
  /* the FMU at the accepted point */
  if (version == 2) {
    check(FN(fmi2Status(*)(fmi2Component, fmi2Real), "fmi2SetTime")(in->c, in->t), "fmi2SetTime");
    check(FN(fmi2Status(*)(fmi2Component, const fmi2Real*, size_t), "fmi2SetContinuousStates")(
              in->c, in->x, n),
          "fmi2SetContinuousStates");
    fmi2Boolean enter2 = 0, term = 0;
    check(FN(fmi2Status(*)(fmi2Component, fmi2Boolean, fmi2Boolean*, fmi2Boolean*),
             "fmi2CompletedIntegratorStep")(in->c, 1, &enter2, &term),
          "fmi2CompletedIntegratorStep");
    if (term) die("completedIntegratorStep: terminate at t = %.17g", in->t);
    enter = enter2 != 0;
  } else {
    check(FN(fmi3Status(*)(fmi3Instance, fmi3Float64), "fmi3SetTime")(in->c, in->t), "fmi3SetTime");
    check(FN(fmi3Status(*)(fmi3Instance, const fmi3Float64*, size_t), "fmi3SetContinuousStates")(
              in->c, in->x, n),
          "fmi3SetContinuousStates");
    fmi3Boolean term = false;
    check(FN(fmi3Status(*)(fmi3Instance, fmi3Boolean, fmi3Boolean*, fmi3Boolean*),
             "fmi3CompletedIntegratorStep")(in->c, true, &enter, &term),
          "fmi3CompletedIntegratorStep");
    if (term) die("completedIntegratorStep: terminate at t = %.17g", in->t);
  }
  /* fmusim's rule: an indicator changed its domain (z > 0 or z <= 0) over the step */
  bool state_event = false;
  get_indicators(in, in->z);
  for (i = 0; i < in->nz; ++i)
    if ((in->pre_z[i] <= 0 && in->z[i] > 0) || (in->pre_z[i] > 0 && in->z[i] <= 0))
      state_event = true;
  if (enter) ++in->events;
  if (state_event) ++in->state_events;
  if (enter || state_event) {
    me_event(in);
    get_indicators(in, in->z);
  }
  for (i = 0; i < in->nz; ++i) in->pre_z[i] = in->z[i];
}

/* one communication step (co-simulation) or integrator step (model exchange); returns the status */
static int step(Inst* in, double h) {
  if (me) {
    me_step(in, h);
    return 0;
  }
  int s;
  if (version == 2) {
    s = FN(fmi2Status(*)(fmi2Component, fmi2Real, fmi2Real, fmi2Boolean), "fmi2DoStep")(in->c, in->t,
                                                                                       h, 0);
  } else {
    fmi3Boolean event = false, term = false, early = false;
    fmi3Float64 last = 0;
    s = FN(fmi3Status(*)(fmi3Instance, fmi3Float64, fmi3Float64, fmi3Boolean, fmi3Boolean*,
                         fmi3Boolean*, fmi3Boolean*, fmi3Float64*),
           "fmi3DoStep")(in->c, in->t, h, false, &event, &term, &early, &last);
    if (s <= 1 && (early || last != in->t + h))
      die("fmi3DoStep: early return or lastSuccessfulTime %.17g != %.17g", last, in->t + h);
  }
  if (s <= 1) in->t += h;
  return s;
}

static void* get_state(Inst* in) {
  void* s = NULL;
  check(FN(int (*)(void*, void**), version == 2 ? "fmi2GetFMUstate" : "fmi3GetFMUState")(in->c, &s),
        "GetFMUState");
  return s;
}
static void set_state(Inst* in, void* s) {
  check(FN(int (*)(void*, void*), version == 2 ? "fmi2SetFMUstate" : "fmi3SetFMUState")(in->c, s),
        "SetFMUState");
}
static void* round_trip_state(Inst* in, void* s) {
  size_t size = 0;
  check(FN(int (*)(void*, void*, size_t*), version == 2 ? "fmi2SerializedFMUstateSize"
                                                        : "fmi3SerializedFMUStateSize")(in->c, s,
                                                                                        &size),
        "SerializedFMUStateSize");
  char* bytes = malloc(size);
  check(FN(int (*)(void*, void*, char*, size_t), version == 2 ? "fmi2SerializeFMUstate"
                                                              : "fmi3SerializeFMUState")(
            in->c, s, bytes, size),
        "SerializeFMUState");
  void* back = NULL;
  check(FN(int (*)(void*, const char*, size_t, void**), version == 2 ? "fmi2DeSerializeFMUstate"
                                                                     : "fmi3DeserializeFMUState")(
            in->c, bytes, size, &back),
        "DeserializeFMUState");
  /* a damaged copy is refused with an error status, not a crash */
  bytes[size / 2] ^= 0x5a;
  bytes[0] ^= 0x01;
  void* bad = NULL;
  int st = FN(int (*)(void*, const char*, size_t, void**), version == 2 ? "fmi2DeSerializeFMUstate"
                                                                        : "fmi3DeserializeFMUState")(
      in->c, bytes, size, &bad);
  if (st <= 1) die("a damaged serialized state was accepted");
  free(bytes);
  return back;
}
static void free_state(Inst* in, void* s) {
  check(FN(int (*)(void*, void**), version == 2 ? "fmi2FreeFMUstate" : "fmi3FreeFMUState")(in->c, &s),
        "FreeFMUState");
}

static void misuse(Inst* in, unsigned bad_vr) {
  double v = 0;
  unsigned vr = bad_vr;
  int before = log_count;
  if (get_reals(in, &vr, 1, &v) <= 1) die("a bad value reference was accepted");
  if (log_count == before) die("a bad value reference was not logged");
  /* a step before initialization is in the wrong state */
  if (!me) {
    if (step(in, 0.1) <= 1) die("doStep before initialization was accepted");
  }
  if (version == 2) {
    if (FN(fmi2Status(*)(fmi2Component, fmi2Boolean, fmi2Real, fmi2Real, fmi2Boolean, fmi2Real),
           "fmi2SetupExperiment")(NULL, 0, 0.0, 0.0, 0, 0.0) <= 1)
      die("a null instance was accepted");
    fmi2Component c2 = FN(fmi2Component(*)(fmi2String, fmi2Type, fmi2String, fmi2String,
                                           const fmi2CallbackFunctions*, fmi2Boolean, fmi2Boolean),
                          "fmi2Instantiate")("wrong", fmi2CoSimulation, "{not-the-guid}", "",
                                             &callbacks2, 0, 1);
    if (c2) die("an instance with the wrong GUID was created");
  } else {
    if (FN(fmi3Status(*)(fmi3Instance), "fmi3ExitInitializationMode")(NULL) <= 1)
      die("a null instance was accepted");
  }
}

int main(int argc, char** argv) {
  if (argc < 8) die("usage: fmu_importer LIBRARY 2|3 cs|me TOKEN T_STOP H OUT.csv [options]");
  const char* library = argv[1];
  version = atoi(argv[2]);
  me = strcmp(argv[3], "me") == 0;
  token = argv[4];
  double t_stop = atof(argv[5]), h = atof(argv[6]);
  const char* out_path = argv[7];
  unsigned vrs[256], set_vr[64], in_vr[16];
  bool is_int[256] = {false};
  double set_x[64], in_a[16], in_b[16];
  size_t n_vr = 0, n_set = 0, n_in = 0, nx = 0, nz = 0;
  int instances = 1;
  bool state_check = false, do_misuse = false, expect_fail = false, timing = false,
       all_rows = true;
  for (int i = 8; i < argc; ++i) {
    if ((!strcmp(argv[i], "--vr") || !strcmp(argv[i], "--vri")) && i + 1 < argc && n_vr < 256) {
      is_int[n_vr] = argv[i][4] == 'i';
      vrs[n_vr++] = (unsigned)atol(argv[++i]);
    } else if (!strcmp(argv[i], "--nx") && i + 1 < argc) {
      nx = (size_t)atol(argv[++i]);
    } else if (!strcmp(argv[i], "--set") && i + 1 < argc && n_set < 64) {
      if (sscanf(argv[++i], "%u=%lf", &set_vr[n_set], &set_x[n_set]) != 2) die("bad --set");
      ++n_set;
    } else if (!strcmp(argv[i], "--input") && i + 1 < argc && n_in < 16) {
      if (sscanf(argv[++i], "%u=%lf,%lf", &in_vr[n_in], &in_a[n_in], &in_b[n_in]) != 3)
        die("bad --input");
      ++n_in;
    } else if (!strcmp(argv[i], "--instances") && i + 1 < argc) {
      instances = atoi(argv[++i]);
    } else if (!strcmp(argv[i], "--state-check")) {
      state_check = true;
    } else if (!strcmp(argv[i], "--misuse")) {
      do_misuse = true;
    } else if (!strcmp(argv[i], "--expect-fail")) {
      expect_fail = true;
    } else if (!strcmp(argv[i], "--time")) {
      timing = true;
    } else if (!strcmp(argv[i], "--euler")) {
      euler = true;
    } else if (!strcmp(argv[i], "--indicators") && i + 1 < argc) {
      nz = (size_t)atol(argv[++i]);
    } else if (!strcmp(argv[i], "--no-rows")) {
      all_rows = false;
    } else {
      die("unknown option %s", argv[i]);
    }
  }
  if (instances < 1 || instances > 4) die("--instances 1..4");
  lib = dlopen(library, RTLD_NOW | RTLD_LOCAL);
  if (!lib) die("dlopen: %s", dlerror());
  const char* v = FN(const char* (*)(void), version == 2 ? "fmi2GetVersion" : "fmi3GetVersion")();
  if ((version == 2 && strcmp(v, "2.0") != 0) || (version == 3 && strncmp(v, "3.", 2) != 0))
    die("GetVersion: %s", v);

  Inst in[4];
  memset(in, 0, sizeof in);
  const size_t steps = (size_t)llround(t_stop / h);
  for (int k = 0; k < instances; ++k) {
    instantiate(&in[k], k);
    in[k].nx = nx;
    in[k].x = calloc(nx + 1, sizeof(double));
    in[k].xs = calloc(nx + 1, sizeof(double));
    for (int j = 0; j < 4; ++j) in[k].k[j] = calloc(nx + 1, sizeof(double));
    in[k].nz = me ? nz : 0;
    in[k].z = calloc(nz + 1, sizeof(double));
    in[k].pre_z = calloc(nz + 1, sizeof(double));
    if (do_misuse && k == 0) misuse(&in[k], 0x7fffffffu);
    if (n_set) set_reals(&in[k], set_vr, n_set, set_x);
    initialize(&in[k], 0.0, t_stop);
    for (size_t j = 0; j < n_in; ++j) set_reals(&in[k], &in_vr[j], 1, &in_a[j]);
    exit_initialization(&in[k]);
    if (me) {
      int s = version == 2 ? FN(fmi2Status(*)(fmi2Component, fmi2Real*, size_t),
                                "fmi2GetContinuousStates")(in[k].c, in[k].x, nx)
                           : FN(fmi3Status(*)(fmi3Instance, fmi3Float64*, size_t),
                                "fmi3GetContinuousStates")(in[k].c, in[k].x, nx);
      check(s, "GetContinuousStates");
      get_indicators(&in[k], in[k].pre_z);
    }
  }
  FILE* out = fopen(out_path, "w");
  if (!out) die("cannot write %s", out_path);
  double row[256], other[256];
  void *mid_state = NULL, *mid_copy = NULL;
  size_t mid = steps / 2;
  double* second_half = state_check ? calloc((steps - mid + 1) * (n_vr + 1), sizeof(double)) : NULL;
  struct timespec t_begin, t_done;
  clock_gettime(CLOCK_MONOTONIC, &t_begin);
  for (size_t n = 0; n <= steps; ++n) {
    if (get_row(&in[0], vrs, is_int, n_vr, row) > 1) die("GetReal at t = %g failed", in[0].t);
    for (int k = 1; k < instances; ++k) {
      if (get_row(&in[k], vrs, is_int, n_vr, other) > 1) die("GetReal of instance %d failed", k);
      if (memcmp(row, other, n_vr * sizeof(double)) != 0)
        die("instance %d differs from instance 0 at t = %.17g", k, in[0].t);
    }
    if (all_rows || n == 0 || n == steps) {
      fprintf(out, "%.17g", in[0].t);
      for (size_t j = 0; j < n_vr; ++j) fprintf(out, ",%.17g", row[j]);
      fprintf(out, "\n");
    }
    if (second_half && n >= mid)
      for (size_t j = 0; j < n_vr; ++j) second_half[(n - mid) * (n_vr + 1) + j] = row[j];
    if (state_check && n == mid) {
      mid_state = get_state(&in[0]);
      mid_copy = round_trip_state(&in[0], mid_state);
    }
    if (n == steps) break;
    for (int k = 0; k < instances; ++k) {
      for (size_t j = 0; j < n_in; ++j) {
        double u = in_a[j] + in_b[j] * in[k].t;
        set_reals(&in[k], &in_vr[j], 1, &u);
      }
      const int s = step(&in[k], h);
      if (s > 1) {
        fclose(out);
        if (expect_fail) {
          printf("step failed at t = %.17g with status %d\n", in[k].t, s);
          return 0;
        }
        die("step at t = %g failed with status %d", in[k].t, s);
      }
    }
  }
  clock_gettime(CLOCK_MONOTONIC, &t_done);
  fclose(out);
  if (expect_fail) die("the run was expected to fail");
  if (me && in[0].events > 0) printf("model-exchange step events: %ld\n", in[0].events);
  if (me && nz > 0) printf("model-exchange state events: %ld\n", in[0].state_events);
  if (timing)
    printf("loop %zu steps in %.6f s\n", steps,
           (double)(t_done.tv_sec - t_begin.tv_sec) + 1e-9 * (double)(t_done.tv_nsec - t_begin.tv_nsec));
  if (state_check) {
    /* the second half again, from the state and from its serialized copy: identical */
    void* states[2] = {mid_state, mid_copy};
    for (int r = 0; r < 2; ++r) {
      set_state(&in[0], states[r]);
      in[0].t = mid * h;
      if (me) {
        int s = version == 2 ? FN(fmi2Status(*)(fmi2Component, fmi2Real*, size_t),
                                  "fmi2GetContinuousStates")(in[0].c, in[0].x, nx)
                             : FN(fmi3Status(*)(fmi3Instance, fmi3Float64*, size_t),
                                  "fmi3GetContinuousStates")(in[0].c, in[0].x, nx);
        check(s, "GetContinuousStates");
        get_indicators(&in[0], in[0].pre_z);
      }
      for (size_t n = mid; n <= steps; ++n) {
        if (get_row(&in[0], vrs, is_int, n_vr, row) > 1) die("GetReal after SetFMUState failed");
        if (memcmp(row, &second_half[(n - mid) * (n_vr + 1)], n_vr * sizeof(double)) != 0)
          die("run %d from the FMU state differs at t = %.17g", r, in[0].t);
        if (n == steps) break;
        for (size_t j = 0; j < n_in; ++j) {
          double u = in_a[j] + in_b[j] * in[0].t;
          set_reals(&in[0], &in_vr[j], 1, &u);
        }
        if (step(&in[0], h) > 1) die("step after SetFMUState failed");
      }
    }
    free_state(&in[0], mid_state);
    free_state(&in[0], mid_copy);
    printf("state check ok\n");
  }
  for (int k = 0; k < instances; ++k) {
    check(FN(int (*)(void*), version == 2 ? "fmi2Terminate" : "fmi3Terminate")(in[k].c), "Terminate");
    FN(void (*)(void*), version == 2 ? "fmi2FreeInstance" : "fmi3FreeInstance")(in[k].c);
    free(in[k].x);
    free(in[k].xs);
    for (int j = 0; j < 4; ++j) free(in[k].k[j]);
    free(in[k].z);
    free(in[k].pre_z);
  }
  free(second_half);
  if (dlclose(lib) != 0) die("dlclose: %s", dlerror());
  return 0;
}
