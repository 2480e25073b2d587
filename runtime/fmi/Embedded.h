// What an exported FMU carries, loaded: the model (from its image, the kernels bound to the
// library's own code), its variable table, the configuration and the solver options. Built once
// per process by tools/fmu/blob/Embedded.cpp from the exporter's embedding object; here so that
// it can be tested without one.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "runtime/fmi/Config.h"
#include "runtime/fmi/Variables.h"
#include "runtime/model/CompiledModel.h"
#include "runtime/solvers/Options.h"

namespace mbs::rt::fmi {

struct EmbeddedModel {
  std::shared_ptr<const CompiledModel> model;
  std::shared_ptr<const VariableTable> variables;
  FmuConfig config;
  SolverOptions options;  // the defaults with the configuration's options; t_end = stop_time
};

// Reads the model image, binds its kernels with `resolve` (symbol -> function, nullptr if
// unknown), parses the configuration, sets the options and builds the variable table with the
// configured outputs. Returns "" or what is wrong.
std::string load_embedded(std::string_view image, std::string_view config,
                          const std::function<KernelFn(const std::string& symbol)>& resolve,
                          EmbeddedModel& out);

}  // namespace mbs::rt::fmi
