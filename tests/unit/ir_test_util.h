// Helpers for tests that read the LLVM IR the code generator prints (JitModule::compile's
// ir_text, `mbsc --emit ir`).
#pragma once

#include <cstddef>
#include <sstream>
#include <string>

namespace mbs::testutil {

// The instructions of the functions in `ir`: its lines indented by two spaces (globals and
// function headers start at column 0).
inline size_t ir_instructions(const std::string& ir) {
  size_t count = 0;
  std::istringstream in(ir);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("  ", 0) == 0) ++count;
  return count;
}

}  // namespace mbs::testutil
