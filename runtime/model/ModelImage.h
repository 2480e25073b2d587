// The serialised form of a CompiledModel: everything it holds except the kernels' code, which is
// named by symbol (Kernel::symbol). The model cache (compiler/driver/ModelCache) stores an image
// beside the object files of the kernels and loads the model without compiling; an exported FMU
// carries an image and resolves the symbols in its own shared library.
//
// The format is little-endian binary: the magic "mbs-model\n", a format version, then every field
// of CompiledModel in declaration order (integers as fixed-width little-endian, doubles as their
// IEEE bits, strings and vectors with a 64-bit length). It is read with bounds checks: a damaged
// or foreign image is an error, never a crash. It is not a long-term exchange format: the
// version changes whenever a field does, and an image of another version is refused.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "runtime/model/CompiledModel.h"

namespace mbs::rt {

constexpr uint32_t kModelImageVersion = 13;  // 2: output_interface; 3: inputs; 4: events;
                                             // 5: start_compile_time (initial equations);
                                             // 6: discrete variables, initial(), terminal();
                                             // 7: output_discrete;
                                             // 8: rotation_charts; 9: z_auxiliary;
                                             // 10: EquationRole::UnitQuaternion;
                                             // 11: crossing_side_slot, parameter_derived,
                                             //     parameter_type, output_type;
                                             // 12: shapes, shape_frames, shape_frame_column;
                                             // 13: experiment_stop_time, _interval, _tolerance

// The image of `m` (without code_owner and the kernels' function pointers).
std::string write_model_image(const CompiledModel& m);

// Reads an image into `m` (kernels with their symbols and no code yet). Returns "" or what is
// wrong with the image.
std::string read_model_image(std::string_view image, CompiledModel& m);

// Every kernel of `m`, with the name of its field ("residual", "newton_matrix", ...).
void for_each_kernel(CompiledModel& m, const std::function<void(const char*, Kernel&)>& f);
void for_each_kernel(const CompiledModel& m,
                     const std::function<void(const char*, const Kernel&)>& f);

// Gives every kernel with a symbol its code: resolve(symbol) returns the function, or nullptr.
// Returns "" or the first symbol that could not be resolved.
std::string bind_kernels(CompiledModel& m,
                         const std::function<KernelFn(const std::string& symbol)>& resolve);

}  // namespace mbs::rt
