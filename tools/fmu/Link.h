// Linking an FMU's shared library: the model's kernels (relocatable ELF objects from
// codegen::JitModule::object_files(), position-independent code) with the FMU runtime blob
// (tools/fmu/CMakeLists.txt) into one self-contained shared library whose only dependencies are
// glibc's libc.so.6, libm.so.6 and the dynamic loader. LLD is used as a library: no C compiler,
// no linker program and no libc6-dev files are needed at export time (docs/fmu.md).
#pragma once

#include <string>
#include <vector>

namespace mbs::fmu {

// Links `objects` (the bytes of relocatable x86-64 ELF objects) with the runtime blob into the
// shared library `out_path`, exporting exactly `exported_symbols` (each defined by an object or
// by the blob; every other symbol is local). Its soname is the file name of out_path. Returns ""
// on success, else what went wrong, with the linker's messages (objects are named `object<i>.o`
// after their index); out_path is then left as it was.
std::string link_shared_library(const std::vector<std::string>& objects,
                                const std::vector<std::string>& exported_symbols,
                                const std::string& out_path);

// The runtime blob linked into every library: <home>/lib/mbs/mbs_fmu_runtime.o of the
// installation or build tree (runtime/io/Home.h).
std::string runtime_blob_path();

}  // namespace mbs::fmu
