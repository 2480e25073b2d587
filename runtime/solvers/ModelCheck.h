// Checks that a CompiledModel is consistent (sizes, slots, patterns) before a solver runs on it,
// so a compiler bug shows up as a message naming the field and the expected size instead of an
// out-of-bounds access inside a step.
#pragma once

#include "runtime/model/CompiledModel.h"

namespace mbs::rt {

// Throws SolverSetupError naming the first inconsistency.
void check_model(const CompiledModel& model);

}  // namespace mbs::rt
