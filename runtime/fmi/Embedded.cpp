// What an exported FMU carries, loaded (Embedded.h).
#include "runtime/fmi/Embedded.h"

#include "runtime/model/ModelImage.h"

namespace mbs::rt::fmi {

std::string load_embedded(std::string_view image, std::string_view config,
                          const std::function<KernelFn(const std::string& symbol)>& resolve,
                          EmbeddedModel& out) {
  auto model = std::make_shared<CompiledModel>();
  if (std::string why = read_model_image(image, *model); !why.empty())
    return "the FMU's model image: " + why;
  if (std::string missing = bind_kernels(*model, resolve); !missing.empty())
    return "the FMU's library has no kernel '" + missing + "'";
  EmbeddedModel e;
  if (std::string why = parse_fmu_config(config, e.config); !why.empty()) return why;
  for (const auto& [key, value] : e.config.options)
    if (auto why = set_option(e.options, key, value)) return "the FMU's solver options: " + *why;
  if (e.config.stop_time) e.options.t_end = *e.config.stop_time;
  if (auto why = validate(e.options)) return "the FMU's solver options: " + *why;
  auto table = std::make_shared<VariableTable>();
  if (std::string why = fmu_variables(*model, e.config.outputs, *table, &e.options); !why.empty())
    return "the FMU's outputs: " + why;
  if (e.config.model_exchange) {
    if (std::string why = model_exchange_obstacle(*model); !why.empty())
      return "the FMU offers model exchange but " + why;
  }
  e.model = std::move(model);
  e.variables = std::move(table);
  out = std::move(e);
  return {};
}

}  // namespace mbs::rt::fmi
