// The libFuzzer entry point of one target; fuzz/CMakeLists.txt builds it once per target with
// MBS_FUZZ_TARGET set to the target's function (fuzz_parse: mbs_fuzz_parse, ...).
#include "fuzz/Targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return mbs::fuzz::MBS_FUZZ_TARGET(data, size);
}
