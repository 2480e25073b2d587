// The model cache (ModelCache.h).
#include "compiler/driver/ModelCache.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <set>
#include <sstream>

#include "compiler/codegen/Jit.h"
#include "runtime/model/ModelImage.h"

namespace mbs {

namespace {

// The compiler: the running executable (the compiler is linked into it), by path, size and
// modification time, so that a rebuilt mbsc never reads entries of an earlier one.
std::string compiler_identity() {
  static const std::string id = [] {
    std::string path(4096, '\0');
    ssize_t n = ::readlink("/proc/self/exe", path.data(), path.size() - 1);
    path.resize(n > 0 ? static_cast<size_t>(n) : 0);
    struct stat st {};
    if (path.empty() || ::stat(path.c_str(), &st) != 0) return std::string("unknown");
    return fmt::format("{} {} {}.{:09}", path, st.st_size, st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
  }();
  return id;
}

// A number exactly, so that two values give two keys.
std::string exact(double x) {
  return fmt::format("{:a}", x);
}

// A list of strings as bytes: the count, then each with its length (64-bit little-endian).
void put_u64(std::string& out, uint64_t x) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((x >> (8 * i)) & 0xff));
}

// The list's bytes as pieces: `lengths` holds the count and each length, `pieces` views into it
// and into `parts` (written one after the other, without a copy of the parts).
void encode_list(const std::vector<std::string_view>& parts, std::string& lengths,
                 std::vector<std::string_view>& pieces) {
  lengths.clear();
  put_u64(lengths, parts.size());
  for (std::string_view p : parts) put_u64(lengths, p.size());
  pieces.clear();
  pieces.push_back(std::string_view(lengths).substr(0, 8));
  for (size_t i = 0; i < parts.size(); ++i) {
    pieces.push_back(std::string_view(lengths).substr(8 * (i + 1), 8));
    pieces.push_back(parts[i]);
  }
}

// "" or what is wrong; `parts` views into `bytes`.
std::string decode_list(std::string_view bytes, std::vector<std::string_view>& parts) {
  size_t at = 0;
  auto get = [&](uint64_t& x) {
    if (bytes.size() - at < 8) return false;
    x = 0;
    for (int i = 0; i < 8; ++i) x |= uint64_t{static_cast<unsigned char>(bytes[at + i])} << (8 * i);
    at += 8;
    return true;
  };
  uint64_t n = 0;
  if (!get(n) || n > bytes.size()) return "a damaged list of parts";
  for (uint64_t i = 0; i < n; ++i) {
    uint64_t len = 0;
    if (!get(len) || len > bytes.size() - at) return "a damaged part";
    parts.push_back(bytes.substr(at, len));
    at += len;
  }
  if (at != bytes.size()) return "bytes after the last part";
  return {};
}

std::vector<std::string> lines_of(std::string_view text) {
  std::vector<std::string> lines;
  std::string line;
  std::istringstream in{std::string(text)};
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

// Are the library files as the entry recorded them? "" if so, else the first that is not.
std::string changed_library_file(std::string_view probes) {
  for (const std::string& line : lines_of(probes)) {
    // "F <hash> <path>" or "A - <path>"
    if (line.size() < 4) return "?";
    const size_t sp = line.find(' ', 2);
    if (sp == std::string::npos) return "?";
    const std::string hash = line.substr(2, sp - 2), path = line.substr(sp + 1);
    struct stat st {};
    const bool found = ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
    if (line[0] == 'A') {
      if (found) return path;
      continue;
    }
    if (!found) return path;
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    if (!in.good() && !in.eof()) return path;
    if (text_hash(ss.str()) != hash) return path;
  }
  return {};
}

}  // namespace

std::string text_hash(const std::string& text) {
  const std::string_view material[] = {text};
  return codegen::hex(codegen::cache_key(material));
}

codegen::CacheKey model_cache_key(const CompileOptions& o, const std::string& main_text) {
  std::vector<std::string> m = {
      kModelCacheFormat,
      MBS_VERSION,
      compiler_identity(),
      codegen::host_code_identity(),
      o.file,
      main_text,
      o.model,
      fmt::format("O{} reactions {} inverse {} sens {} max {} depth {} cpu {} project {} anim {}",
                  o.opt_level, o.reactions, o.inverse_dynamics, o.sensitivities, o.max_instances,
                  o.recursive_depth, o.cpu, o.project_start_velocities, o.animation)};
  for (const std::string& d : library_path(o.include_dirs)) m.push_back("path " + d);
  for (const auto& [name, x] : o.overrides) m.push_back("set " + name + "=" + exact(x));
  for (const auto& [name, x] : o.start_overrides) m.push_back("start " + name + "=" + exact(x));
  std::vector<std::string_view> views(m.begin(), m.end());
  return codegen::cache_key(views);
}

ModelCacheRead read_model_cache(const std::string& dir, const codegen::CacheKey& key) {
  ModelCacheRead r;
  const std::string path = codegen::cache_entry_path(dir, key, ".model");
  codegen::CacheRead entry = codegen::read_cache_entry(path, key);
  auto damaged = [&](std::string why) {
    r.damage = std::move(why);
    r.delete_error = codegen::delete_cache_entry(path);
    r.hit = {};
    return r;
  };
  if (!entry.damage.empty()) return damaged(entry.damage);
  if (entry.object == nullptr) return r;  // no entry
  std::vector<std::string_view> parts;
  if (std::string e = decode_list(entry.object->getBuffer(), parts); !e.empty()) return damaged(e);
  if (parts.size() < 6) return damaged("too few parts");
  // a library file changed (or a new one would be found first): a miss, and the entry is
  // replaced after the compile
  if (!changed_library_file(parts[0]).empty()) return r;
  CachedCompile& c = r.hit;
  c.warnings = std::string(parts[1]);
  c.notes = std::string(parts[5]);
  c.diagnostic_kinds = lines_of(parts[2]);
  for (const std::string& line : lines_of(parts[0]))  // the library files read ("F <hash> <path>")
    if (line[0] == 'F') c.library_files.push_back(line.substr(line.find(' ', 2) + 1));
  for (const std::string& line : lines_of(parts[3])) {
    CompileResult::KernelSize k;
    std::istringstream in(line);
    if (!(in >> k.name >> k.nodes >> k.outputs)) return damaged("a damaged list of kernel sizes");
    c.kernel_sizes.push_back(k);
  }
  auto model = std::make_shared<rt::CompiledModel>();
  if (std::string e = rt::read_model_image(parts[4], *model); !e.empty()) return damaged(e);
  std::vector<std::string> objects(parts.begin() + 6, parts.end());
  std::set<std::string> symbols;
  rt::for_each_kernel(*model, [&](const char*, const rt::Kernel& k) {
    if (!k.symbol.empty()) symbols.insert(k.symbol);
  });
  std::string error;
  std::shared_ptr<codegen::JitModule> jit = codegen::JitModule::load(
      objects, std::vector<std::string>(symbols.begin(), symbols.end()), &error);
  if (!jit) return damaged("its kernels do not link: " + error);
  if (std::string missing =
          rt::bind_kernels(*model, [&](const std::string& s) { return jit->lookup(s); });
      !missing.empty())
    return damaged("no code for kernel '" + missing + "'");
  model->code_owner = jit;
  c.model = std::move(model);
  c.objects = std::move(objects);
  return r;
}

std::string write_model_cache(const std::string& dir, const codegen::CacheKey& key,
                              const std::vector<LibraryProbe>& probes, const CachedCompile& compile,
                              const std::vector<std::string>& objects) {
  std::string probe_text;
  for (const LibraryProbe& p : probes) {
    if (p.path.find('\n') != std::string::npos) return "a library path with a newline";
    probe_text += p.found ? "F " + p.text_hash + " " + p.path + "\n" : "A - " + p.path + "\n";
  }
  std::string kinds, sizes;
  for (const std::string& k : compile.diagnostic_kinds) kinds += k + "\n";
  for (const auto& k : compile.kernel_sizes)
    sizes += fmt::format("{} {} {}\n", k.name, k.nodes, k.outputs);
  const std::string image = rt::write_model_image(*compile.model);
  std::vector<std::string_view> parts = {probe_text, compile.warnings, kinds, sizes,
                                         image,      compile.notes};
  for (const std::string& o : objects) parts.push_back(o);
  std::string lengths;
  std::vector<std::string_view> pieces;
  encode_list(parts, lengths, pieces);
  return codegen::write_cache_entry(codegen::cache_entry_path(dir, key, ".model"), key, pieces);
}

}  // namespace mbs
