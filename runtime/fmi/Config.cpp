// The configuration text of an exported FMU (Config.h).
#include "runtime/fmi/Config.h"

#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace mbs::rt::fmi {

namespace {

constexpr std::string_view kHeader = "mbs-fmu-config";
constexpr int kVersion = 1;

bool parse_double(const std::string& s, double& x) {
  if (s.empty()) return false;
  char* end = nullptr;
  errno = 0;
  x = std::strtod(s.c_str(), &end);
  return errno == 0 && end == s.c_str() + s.size() && std::isfinite(x);
}

}  // namespace

std::string write_fmu_config(const FmuConfig& c) {
  std::string out = fmt::format("{} {}\n", kHeader, kVersion);
  out += fmt::format("fmi_version {}\n", c.fmi_version);
  out += fmt::format("model_identifier {}\n", c.model_identifier);
  out += fmt::format("instantiation_token {}\n", c.instantiation_token);
  out += fmt::format("types {}\n", c.co_simulation && c.model_exchange ? "both"
                                   : c.model_exchange                  ? "me"
                                                                       : "cs");
  for (const std::string& o : c.outputs) out += fmt::format("output {}\n", o);
  for (const auto& [key, value] : c.options) out += fmt::format("option {} {}\n", key, value);
  // 17 significant digits read back to the same double
  if (c.stop_time) out += fmt::format("stop_time {:.17g}\n", *c.stop_time);
  return out;
}

std::string parse_fmu_config(std::string_view text, FmuConfig& c) {
  FmuConfig r;
  r.co_simulation = false;
  bool header = false, types = false;
  size_t line_no = 0;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    const size_t sp = line.find(' ');
    const std::string key(line.substr(0, sp));
    const std::string rest(sp == std::string_view::npos ? std::string_view{} : line.substr(sp + 1));
    const auto bad = [&](std::string_view why) {
      return fmt::format("FMU configuration, line {}: {}: '{}'", line_no, why, line);
    };
    if (!header) {
      if (key != kHeader) return bad("expected the header 'mbs-fmu-config 1'");
      if (rest != std::to_string(kVersion)) return bad("unknown version of the configuration");
      header = true;
    } else if (key == "fmi_version") {
      if (rest != "2" && rest != "3") return bad("the FMI version must be 2 or 3");
      r.fmi_version = rest == "2" ? 2 : 3;
    } else if (key == "model_identifier") {
      r.model_identifier = rest;
    } else if (key == "instantiation_token") {
      r.instantiation_token = rest;
    } else if (key == "types") {
      if (rest != "cs" && rest != "me" && rest != "both")
        return bad("types must be cs, me or both");
      r.co_simulation = rest != "me";
      r.model_exchange = rest != "cs";
      types = true;
    } else if (key == "output") {
      if (rest.empty()) return bad("an output needs a name");
      r.outputs.push_back(rest);
    } else if (key == "option") {
      const size_t s2 = rest.find(' ');
      if (s2 == std::string::npos || s2 == 0) return bad("an option needs a key and a value");
      r.options.emplace_back(rest.substr(0, s2), rest.substr(s2 + 1));
    } else if (key == "stop_time") {
      double t = 0.0;
      if (!parse_double(rest, t)) return bad("the stop time must be a finite number");
      r.stop_time = t;
    } else {
      return bad("unknown item");
    }
  }
  if (!header) return "FMU configuration: empty (no 'mbs-fmu-config 1' header)";
  if (!types) return "FMU configuration: no 'types' line";
  if (r.model_identifier.empty()) return "FMU configuration: no 'model_identifier' line";
  c = std::move(r);
  return {};
}

}  // namespace mbs::rt::fmi
