// modelDescription.xml of an exported FMU, FMI 2.0 or 3.0, written from the model's variable
// table (runtime/fmi/Variables.h), so that the XML and the FMU's binary agree on every value
// reference. Every document written here validates against the official schemas
// (../shared/fmi/schema; tests/unit/test_fmu_model_description.cpp runs xmllint on it).
#pragma once

#include <string>

#include "runtime/fmi/Variables.h"
#include "runtime/model/CompiledModel.h"

namespace mbs::fmu {

enum class FmiVersion { V2, V3 };

struct DescriptionOptions {
  FmiVersion version = FmiVersion::V3;
  bool co_simulation = true;
  bool model_exchange = false;
  std::string model_identifier;  // the shared library's name (a C identifier)
  std::string token;             // FMI 2 guid / FMI 3 instantiationToken, e.g. "{hex...}"
  std::string description;
  std::string generation_date;  // xs:dateTime, e.g. "2026-12-02T18:30:00Z"; "" = none
  // what the binary supports (the runtime's capabilities, declared as such)
  bool can_get_set_state = false;
  bool can_serialize_state = false;
  bool directional_derivatives = false;
  // <DefaultExperiment>
  double start_time = 0.0, stop_time = 1.0, tolerance = 1e-6, step_size = 1e-3;
};

// The document, or "" with *error set (an option that cannot be written, a model exchange
// export of a model that cannot have one: rt::fmi::model_exchange_obstacle).
std::string model_description(const rt::CompiledModel& m, const rt::fmi::VariableTable& table,
                              const DescriptionOptions& options, std::string* error);

// Text as XML attribute content: & < > " and control characters escaped.
std::string xml_escape(const std::string& text);

}  // namespace mbs::fmu
