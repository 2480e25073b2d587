// The entry points of an FMU's shared library. Everything in the FMU runtime blob is compiled with
// hidden visibility (tools/fmu/CMakeLists.txt); only functions declared with MBS_FMU_EXPORT stay
// global in the blob, and of those only the ones the exporter names are exported by the linked
// library (tools/fmu/Link.h).
#pragma once

#define MBS_FMU_EXPORT extern "C" __attribute__((visibility("default")))
