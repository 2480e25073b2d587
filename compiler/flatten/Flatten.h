// Flattening: instantiate a model with its components, modifiers, `extends` and `connect`, and
// expand arrays to scalars. The result is a FlatModel whose expressions live in the symbolic DAG.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compiler/diag/Diagnostics.h"
#include "compiler/flatten/FlatModel.h"
#include "compiler/symbolic/Expr.h"
#include "compiler/syntax/Ast.h"

namespace mbs {

// Finds classes by name: first in the files already loaded, then as `<dir>/<Name>.mbs` in each
// directory of the library path (the order given: -I directories, then $MBS_PATH, then stdlib/).
// Loaded files stay alive as long as the loader.
class ClassLoader {
 public:
  ClassLoader(SourceManager& sources, DiagnosticEngine& diags, std::vector<std::string> path);
  ~ClassLoader();

  // Adds an already parsed file (the main file); its classes become top-level names.
  void add_file(std::unique_ptr<ast::File> file);
  // A top-level class by name, loading a library file when needed; nullptr if none.
  const ast::ClassDef* find_top_level(const std::string& name, Span use);
  const std::vector<std::string>& path() const { return path_; }
  const std::vector<std::unique_ptr<ast::File>>& files() const { return files_; }
  // Every library file the loader looked for, in order, and whether it was there: what a cache
  // of the compiled model must check to know that the same files would be found again.
  struct Probe {
    std::string path;
    bool found = false;
  };
  const std::vector<Probe>& probes() const { return probes_; }
  // True when a library file for `name` was found but had errors (already reported).
  bool failed_to_load(const std::string& name) const { return failed_.count(name) != 0; }

 private:
  SourceManager& sources_;
  DiagnosticEngine& diags_;
  std::vector<std::string> path_;
  std::vector<std::unique_ptr<ast::File>> files_;
  std::map<std::string, const ast::ClassDef*> top_;
  std::map<std::string, bool> tried_;
  std::map<std::string, bool> failed_;
  std::vector<Probe> probes_;
};

struct FlattenOptions {
  std::string model_name;                         // empty: the last model of the main file
  std::map<std::string, double> overrides;        // --set NAME=VALUE for parameters
  std::map<std::string, double> start_overrides;  // --start NAME=VALUE for variables
  // Component instances (array elements one by one) in one model, and elements of one array
  // value: bounds what one model may cost (docs/diagnostics.md, "Limits"; the inputs in
  // fuzz/regressions/flatten/ hung or crashed without it).
  size_t max_instances = 2'000'000;
};

// Flattens `model` (a class of the main file). Returns nullopt when errors were reported.
std::optional<FlatModel> flatten(const ast::ClassDef& model, ClassLoader& loader,
                                 const SourceManager& sources, sym::Context& cx,
                                 DerivativeTable& ders, const FlattenOptions& options,
                                 DiagnosticEngine& diags);

// The model of `file` to simulate: the one named `name`, or the last `model` when name is empty.
const ast::ClassDef* select_model(const ast::File& file, const std::string& name);

}  // namespace mbs
