// The fuzz targets: each takes one input as the text of a .mbs file and runs the compiler on it
// up to and including one pass. libFuzzer calls them through fuzz/FuzzMain.cpp (built with
// -DMBS_FUZZ=ON, the `fuzz` preset); the test suite calls the same functions on the seed corpus
// and on every input that ever failed (tests/unit/test_fuzz.cpp), so regressions are checked by
// every build, with or without clang.
//
// A finding is a crash, a sanitizer report, an exception escaping the compiler, a run longer than
// libFuzzer's -timeout, or a failed check: a compilation that fails without reporting an error.
// Every target returns 0 (libFuzzer reserves other values).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace mbs::fuzz {

// read -> parse (and the AST printer, `--emit=ast`)
int mbs_fuzz_parse(const uint8_t* data, size_t size);
// ... -> flatten with the library path (stdlib/), so `import Mechanics.*` works (`--emit=flat`)
int mbs_fuzz_flatten(const uint8_t* data, size_t size);
// ... -> flatten -> mech -> dae (`--emit=dae`)
int mbs_fuzz_dae(const uint8_t* data, size_t size);
// the whole pipeline up to the kernels and the start-value check, without code generation
int mbs_fuzz_pipeline(const uint8_t* data, size_t size);

struct Target {
  const char* name;  // the folder of its regressions: fuzz/regressions/<name>/
  int (*run)(const uint8_t* data, size_t size);
};
// The four targets above, in pipeline order.
const std::vector<Target>& targets();

}  // namespace mbs::fuzz
