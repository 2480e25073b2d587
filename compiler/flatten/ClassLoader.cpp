// Library classes: a top-level name not in the files given is looked for as NAME.mbs on the
// library path, read through rt::read_input_file and parsed on first use; select_model picks the
// model of a file.
#include <filesystem>

#include "compiler/flatten/Flatten.h"
#include "compiler/syntax/Parser.h"
#include "runtime/io/InputFile.h"

namespace mbs {

// ------------------------------------------------------------------------------------------------
// ClassLoader

ClassLoader::ClassLoader(SourceManager& sources, DiagnosticEngine& diags,
                         std::vector<std::string> path)
    : sources_(sources), diags_(diags), path_(std::move(path)) {}
ClassLoader::~ClassLoader() = default;

void ClassLoader::add_file(std::unique_ptr<ast::File> file) {
  for (const auto& c : file->classes) top_.emplace(c->name, c.get());
  files_.push_back(std::move(file));
}

const ast::ClassDef* ClassLoader::find_top_level(const std::string& name, Span use) {
  if (auto it = top_.find(name); it != top_.end()) return it->second;
  if (tried_.count(name)) return nullptr;
  tried_[name] = true;
  for (const auto& dir : path_) {
    std::filesystem::path p = std::filesystem::path(dir) / (name + ".mbs");
    std::error_code ec;
    const bool found = std::filesystem::is_regular_file(p, ec);
    probes_.push_back({p.string(), found});
    if (!found) continue;
    std::string why;
    std::optional<std::string> text =
        rt::read_input_file(p.string(), rt::kSourceFileLimit, "library file", why);
    if (!text) {
      diags_.report(DiagKind::library_parse_failed, use, {p.string()});
      diags_.help("it could not be read: " + why);
      failed_[name] = true;
      return nullptr;
    }
    uint32_t id = sources_.add_file(p.string(), std::move(*text));
    size_t before = diags_.error_count();
    auto file = parse_file(sources_, id, diags_);
    if (!file || diags_.error_count() != before) {
      diags_.report(DiagKind::library_parse_failed, use, {p.string()});
      failed_[name] = true;
      return nullptr;
    }
    add_file(std::move(file));
    if (auto it = top_.find(name); it != top_.end()) return it->second;
  }
  return nullptr;
}

const ast::ClassDef* select_model(const ast::File& file, const std::string& name) {
  const ast::ClassDef* last = nullptr;
  for (const auto& c : file.classes) {
    if (!name.empty()) {
      if (c->name == name) return c.get();
      continue;
    }
    if (c->kind == ast::ClassKind::Model || c->kind == ast::ClassKind::Block ||
        c->kind == ast::ClassKind::Class)
      last = c.get();
  }
  return last;
}

}  // namespace mbs
