#include "fuzz/Targets.h"

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>

#include "compiler/driver/Compile.h"

namespace mbs::fuzz {

namespace {

// Compiles `data` as the file fuzz.mbs, emitting `emit` (which stops the pipeline after that
// pass) into a string; with emit "" it stops before code generation.
int compile_input(const uint8_t* data, size_t size, const char* emit) {
  CompileOptions options;
  options.file = "fuzz.mbs";
  options.source = std::string(reinterpret_cast<const char*>(data), size);
  options.emit = emit;
  options.codegen = false;
  options.cache_dir = "off";
  // a model of 100,000 scalars flattens in seconds under the sanitizers; larger ones are legal
  // but would trip libFuzzer's timeout
  options.max_instances = 100'000;
  std::ostringstream out, diag;
  CompileResult r = compile(options, out, diag);
  // every failure must tell the user why
  if (!r.ok && (r.diagnostic_kinds.empty() || diag.str().empty())) {
    std::fprintf(stderr, "mbs fuzz: the compilation failed without an error message\n");
    std::abort();
  }
  if (r.model) {
    std::fprintf(stderr, "mbs fuzz: code was generated although codegen is off\n");
    std::abort();
  }
  return 0;
}

}  // namespace

int mbs_fuzz_parse(const uint8_t* data, size_t size) {
  return compile_input(data, size, "ast");
}
int mbs_fuzz_flatten(const uint8_t* data, size_t size) {
  return compile_input(data, size, "flat");
}
int mbs_fuzz_dae(const uint8_t* data, size_t size) {
  return compile_input(data, size, "dae");
}
int mbs_fuzz_pipeline(const uint8_t* data, size_t size) {
  return compile_input(data, size, "");
}

const std::vector<Target>& targets() {
  static const std::vector<Target> all = {{"parse", mbs_fuzz_parse},
                                          {"flatten", mbs_fuzz_flatten},
                                          {"dae", mbs_fuzz_dae},
                                          {"pipeline", mbs_fuzz_pipeline}};
  return all;
}

}  // namespace mbs::fuzz
