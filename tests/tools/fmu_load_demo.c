/* Loads an FMU's shared library the way an importer does (dlopen of the file, dlsym of C entry
   points) and calls one function, printing what it returns. A C program with no sanitizer
   runtime: it needs nothing but libc, like an importer on a machine without mbs. Used by
   tests/unit/test_fmu_link.cpp, which runs it in an empty environment.

     fmu_load_demo LIB.so kernel NAME NOUT V...   int32_t NAME(const double* v, double* out)
     fmu_load_demo LIB.so klu N                   mbs_fmu_selftest_klu(N, x)
     fmu_load_demo LIB.so exception               mbs_fmu_selftest_exception(buf, size)
     fmu_load_demo LIB.so option NAME VALUE       mbs_fmu_selftest_option(NAME, VALUE, buf, size)

   Prints "environ N" (the number of environment entries), "status S", then the values, one per
   line, with 17 significant digits; unloads the library and exits with 0, or 2 on a usage or
   loading error (with the reason on stderr). */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern char** environ;

/* Looks up a function; copies its address into *fn (ISO C has no cast from void* to a function
   pointer; POSIX guarantees the representations agree). Returns 0 when it is missing. */
static int symbol(void* lib, const char* name, void* fn, size_t size) {
  void* f = dlsym(lib, name);
  if (!f) {
    fprintf(stderr, "fmu_load_demo: %s: %s\n", name, dlerror());
    return 0;
  }
  memcpy(fn, &f, size);
  return 1;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: fmu_load_demo LIB.so kernel|klu|exception ...\n");
    return 2;
  }
  int entries = 0;
  while (environ && environ[entries]) ++entries;
  printf("environ %d\n", entries);
  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "fmu_load_demo: %s\n", dlerror());
    return 2;
  }
  if (strcmp(argv[2], "kernel") == 0 && argc >= 5) {
    typedef int32_t (*Kernel)(const double*, double*);
    Kernel k;
    if (!symbol(lib, argv[3], &k, sizeof k)) return 2;
    int nout = atoi(argv[4]);
    int nin = argc - 5;
    double* v = calloc((size_t)nin + 1, sizeof(double));
    double* out = calloc((size_t)nout + 1, sizeof(double));
    for (int i = 0; i < nin; ++i) v[i] = strtod(argv[5 + i], NULL);
    printf("status %d\n", (int)k(v, out));
    for (int i = 0; i < nout; ++i) printf("%.17g\n", out[i]);
    free(v);
    free(out);
  } else if (strcmp(argv[2], "klu") == 0 && argc == 4) {
    typedef int32_t (*SelfTest)(int32_t, double*);
    SelfTest f;
    if (!symbol(lib, "mbs_fmu_selftest_klu", &f, sizeof f)) return 2;
    int n = atoi(argv[3]);
    double* x = calloc((size_t)n + 1, sizeof(double));
    printf("status %d\n", (int)f(n, x));
    for (int i = 0; i < n; ++i) printf("%.17g\n", x[i]);
    free(x);
  } else if (strcmp(argv[2], "exception") == 0) {
    typedef int32_t (*SelfTest)(char*, int32_t);
    SelfTest f;
    if (!symbol(lib, "mbs_fmu_selftest_exception", &f, sizeof f)) return 2;
    char buf[256];
    printf("status %d\n", (int)f(buf, (int32_t)sizeof buf));
    printf("%s\n", buf);
  } else if (strcmp(argv[2], "option") == 0 && argc == 5) {
    typedef int32_t (*SelfTest)(const char*, const char*, char*, int32_t);
    SelfTest f;
    if (!symbol(lib, "mbs_fmu_selftest_option", &f, sizeof f)) return 2;
    char buf[512];
    printf("status %d\n", (int)f(argv[3], argv[4], buf, (int32_t)sizeof buf));
    printf("%s\n", buf);
  } else {
    fprintf(stderr, "fmu_load_demo: unknown command %s\n", argv[2]);
    return 2;
  }
  fflush(stdout);
  if (dlclose(lib) != 0) {
    fprintf(stderr, "fmu_load_demo: dlclose: %s\n", dlerror());
    return 2;
  }
  return 0;
}
