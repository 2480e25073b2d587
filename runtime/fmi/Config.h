// What an exported FMU knows besides its model: the text the exporter embeds next to the model
// image (tools/fmu/blob/Embedded.cpp reads it back). One item per line, space-separated:
//
//   mbs-fmu-config 1                     first line: the format and its version
//   fmi_version 2                        or 3
//   model_identifier <id>
//   instantiation_token <token>          FMI 2's guid, FMI 3's instantiationToken
//   types cs|me|both
//   output <name>                        repeated, in order: the FMU's outputs
//   option <key> <value>                 repeated: solver options (rt::set_option's keys)
//   stop_time <t>                        optional: the default stop time of the experiment
//
// An item's last field is the rest of the line (a name or value may contain spaces).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mbs::rt::fmi {

struct FmuConfig {
  int fmi_version = 2;  // 2 or 3
  std::string model_identifier;
  std::string instantiation_token;
  bool co_simulation = true;
  bool model_exchange = false;
  std::vector<std::string> outputs;
  std::vector<std::pair<std::string, std::string>> options;  // key, value
  std::optional<double> stop_time;
};

// The text of `c` (what the exporter embeds as mbs_fmu_config).
std::string write_fmu_config(const FmuConfig& c);

// Reads the text back into `c`. Returns "" or what is wrong (with the line number).
std::string parse_fmu_config(std::string_view text, FmuConfig& c);

}  // namespace mbs::rt::fmi
