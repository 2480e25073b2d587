// FMU export (Export.h).
#include "tools/fmu/Export.h"

#include <fmt/format.h>
#include <llvm/Object/ObjectFile.h>
#include <llvm/Support/MemoryBuffer.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "compiler/codegen/ObjectCache.h"
#include "runtime/fmi/Config.h"
#include "runtime/fmi/Variables.h"
#include "runtime/io/Home.h"
#include "runtime/model/ModelImage.h"
#include "tools/fmu/Archive.h"
#include "tools/fmu/Embed.h"
#include "tools/fmu/Link.h"

namespace mbs::fmu {

namespace fs = std::filesystem;

namespace {

std::string read_file(const std::string& path, bool& ok) {
  std::ifstream in(path, std::ios::binary);
  ok = static_cast<bool>(in);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The FMI functions the runtime blob defines for `version`: its global symbols with the
// version's prefix (tools/fmu/blob/Fmi2.cpp, Fmi3.cpp). Read from the blob itself, so the list
// cannot disagree with what it defines.
std::string blob_functions(FmiVersion version, std::vector<std::string>& names) {
  auto buffer = llvm::MemoryBuffer::getFile(runtime_blob_path());
  if (!buffer)
    return "cannot read the FMU runtime " + runtime_blob_path() + " (" +
           rt::install_home().explain() + ")";
  auto object = llvm::object::ObjectFile::createObjectFile((*buffer)->getMemBufferRef());
  if (!object) return "the FMU runtime is damaged: " + llvm::toString(object.takeError());
  const std::string prefix = version == FmiVersion::V3 ? "fmi3" : "fmi2";
  for (const llvm::object::SymbolRef& s : (*object)->symbols()) {
    auto flags = s.getFlags();
    auto name = s.getName();
    if (!flags || !name) continue;
    if (!(*flags & llvm::object::SymbolRef::SF_Global) ||
        (*flags & llvm::object::SymbolRef::SF_Undefined))
      continue;
    if (name->starts_with(prefix)) names.push_back(name->str());
  }
  if (names.empty())
    return "the FMU runtime " + runtime_blob_path() + " defines no " + prefix + " functions";
  return {};
}

std::string now_utc() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// A GUID-shaped hex text from a hash ({8-4-4-4-12}).
std::string token_of(const std::string& hex) {
  return "{" + hex.substr(0, 8) + "-" + hex.substr(8, 4) + "-" + hex.substr(12, 4) + "-" +
         hex.substr(16, 4) + "-" + hex.substr(20, 12) + "}";
}

}  // namespace

std::string model_identifier(const std::string& model_name) {
  std::string id;
  for (char c : model_name) id += std::isalnum(static_cast<unsigned char>(c)) || c == '_' ? c : '_';
  if (id.empty() || std::isdigit(static_cast<unsigned char>(id[0]))) id = "m_" + id;
  return id;
}

std::string export_fmu(const rt::CompiledModel& m, const std::vector<std::string>& objects,
                       const ExportOptions& o, ExportReport* report) {
  using Clock = std::chrono::steady_clock;
  const auto t_start = Clock::now();
  ExportReport local;
  ExportReport& r = report != nullptr ? *report : local;
  r = {};
  if (!o.co_simulation && !o.model_exchange)
    return "an FMU needs co-simulation, model exchange or both";
  if (o.model_exchange) {
    if (std::string why = rt::fmi::model_exchange_obstacle(m); !why.empty())
      return "no model exchange for model '" + m.name + "': " + why;
  }
  if (objects.empty()) return "no object files of the kernels (compile with keep_object_files)";

  // ---- the variables and the configuration the runtime reads
  const std::vector<std::string> outputs =
      o.outputs_given ? o.outputs : rt::fmi::default_outputs(m);
  rt::fmi::VariableTable table;
  if (std::string e = rt::fmi::fmu_variables(m, outputs, table, &o.solver); !e.empty())
    return "FMU outputs: " + e;
  r.model_identifier = model_identifier(m.name);
  const std::string image = rt::write_model_image(m);
  rt::fmi::FmuConfig config_items;
  config_items.fmi_version = o.version == FmiVersion::V3 ? 3 : 2;
  config_items.model_identifier = r.model_identifier;
  config_items.co_simulation = o.co_simulation;
  config_items.model_exchange = o.model_exchange;
  config_items.outputs = outputs;
  for (const rt::OptionSpec& spec : rt::option_table())
    config_items.options.emplace_back(std::string(spec.key), rt::get_option(o.solver, spec));
  config_items.stop_time = o.solver.t_end;
  {
    // the token identifies the model and the export's settings
    const std::string settings = rt::fmi::write_fmu_config(config_items);
    const std::string_view material[] = {"mbs-fmu-token-1", image, settings, m.name};
    r.token = token_of(codegen::hex(codegen::cache_key(material)));
  }
  config_items.instantiation_token = r.token;
  const std::string config = rt::fmi::write_fmu_config(config_items);
  const bool v3 = o.version == FmiVersion::V3;

  // ---- the model description
  DescriptionOptions d;
  d.version = o.version;
  d.co_simulation = o.co_simulation;
  d.model_exchange = o.model_exchange;
  d.model_identifier = r.model_identifier;
  d.token = r.token;
  d.description = "mbs model " + m.name;
  d.generation_date = o.generation_date.empty() ? now_utc() : o.generation_date;
  d.can_get_set_state = true;
  d.can_serialize_state = true;
  // d der / d states from the symbolic Jacobians (rt::fmi::Unit), for models without constraints
  d.directional_derivatives = rt::fmi::constraints_obstacle(m).empty();
  d.start_time = m.v0[static_cast<size_t>(m.slot_time)];
  d.stop_time = o.solver.t_end;
  d.tolerance = o.solver.rtol;
  d.step_size = o.solver.h;
  std::string error;
  std::string xml = model_description(m, table, d, &error);
  if (xml.empty()) return error;

  // ---- the shared library: kernels + embedding + runtime blob
  std::set<std::string> symbols;
  rt::for_each_kernel(m, [&](const char*, const rt::Kernel& k) {
    if (!k.symbol.empty()) symbols.insert(k.symbol);
  });
  std::vector<std::string> inputs = objects;
  inputs.push_back(embedding_object(
      image, config, std::vector<std::string>(symbols.begin(), symbols.end()), o.cpu, &error));
  if (inputs.back().empty()) return "the FMU's embedding object: " + error;
  std::vector<std::string> exports;
  if (std::string e = blob_functions(o.version, exports); !e.empty()) return e;

  std::error_code ec;
  const fs::path dir =
      fs::temp_directory_path(ec) / fmt::format("mbs-fmu-{}-{}", ::getpid(), r.model_identifier);
  fs::create_directories(dir, ec);
  if (ec) return "cannot create a temporary directory: " + ec.message();
  const std::string so_path = (dir / (r.model_identifier + ".so")).string();
  const auto t_link = Clock::now();
  std::string link_error = link_shared_library(inputs, exports, so_path);
  r.link_ms = std::chrono::duration<double, std::milli>(Clock::now() - t_link).count();
  bool ok = false;
  std::string library = link_error.empty() ? read_file(so_path, ok) : std::string();
  fs::remove_all(dir, ec);
  if (!link_error.empty()) return "linking the FMU's library: " + link_error;
  if (!ok) return "cannot read the linked library " + so_path;
  r.library_bytes = library.size();

  // ---- the archive
  std::vector<ArchiveEntry> entries;
  entries.push_back({"modelDescription.xml", std::move(xml)});
  const std::string platform = v3 ? "x86_64-linux" : "linux64";
  entries.push_back(
      {"binaries/" + platform + "/" + r.model_identifier + ".so", std::move(library)});
  if (o.sources != SourcePlacement::None) {
    const std::string folder =
        o.sources == SourcePlacement::Sources ? "sources/" : "documentation/";
    std::set<std::string> names;
    for (const std::string& path : o.source_files) {
      bool read = false;
      std::string text = read_file(path, read);
      if (!read) return "cannot read the model file " + path;
      std::string name = fs::path(path).filename().string();
      // two library files of one name (in different packages) keep both
      for (int k = 2; names.count(name); ++k)
        name = fs::path(path).stem().string() + "_" + std::to_string(k) +
               fs::path(path).extension().string();
      names.insert(name);
      entries.push_back({folder + name, std::move(text)});
    }
  }
  size_t archive_bytes = 0;
  if (std::string e = write_archive(o.path, entries, &archive_bytes); !e.empty()) return e;
  r.archive_bytes = archive_bytes;
  r.total_ms = std::chrono::duration<double, std::milli>(Clock::now() - t_start).count();
  return {};
}

}  // namespace mbs::fmu
