// Every complete model in docs/language.md (a ```modelica block starting with `model` or
// `package`) compiles without diagnostics, so the language reference cannot drift from the
// compiler.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/driver/Compile.h"
#include "runtime/solvers/Options.h"

namespace {

std::vector<std::string> modelica_blocks(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> blocks;
  std::string line, cur;
  bool inside = false;
  while (std::getline(in, line)) {
    if (!inside && line.rfind("```modelica", 0) == 0) {
      inside = true;
      cur.clear();
      continue;
    }
    if (inside && line.rfind("```", 0) == 0) {
      inside = false;
      blocks.push_back(cur);
      continue;
    }
    if (inside) cur += line + "\n";
  }
  return blocks;
}

TEST(Docs, EveryCompleteModelInTheLanguageReferenceCompiles) {
  auto blocks = modelica_blocks(std::string(MBS_SOURCE_DIR) + "/docs/language.md");
  int compiled = 0;
  for (size_t i = 0; i < blocks.size(); ++i) {
    const std::string& b = blocks[i];
    size_t first = b.find_first_not_of(" \n");
    if (first == std::string::npos) continue;
    std::string head = b.substr(first, 8);
    if (head.rfind("model", 0) != 0 && head.rfind("package", 0) != 0 &&
        head.rfind("connector", 0) != 0 && head.rfind("//", 0) != 0)
      continue;
    std::string path =
        testing::TempDir() + std::to_string(getpid()) + "_doc_block_" + std::to_string(i) + ".mbs";
    std::ofstream(path) << b;
    mbs::CompileOptions o;
    o.file = path;
    std::ostringstream emit, diag;
    auto r = mbs::compile(o, emit, diag);
    EXPECT_TRUE(r.ok) << "block " << i << ":\n" << b << "\n" << diag.str();
    EXPECT_EQ(diag.str(), "") << "block " << i;
    ++compiled;
  }
  EXPECT_GE(compiled, 8);
}

TEST(Docs, EverySolverOptionIsDocumentedWithItsDefault) {
  std::ifstream in(std::string(MBS_SOURCE_DIR) + "/docs/solvers.md");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string doc = ss.str();
  for (const auto& spec : mbs::rt::option_table()) {
    std::string row = "| `" + std::string(spec.flag) + "` | `" + std::string(spec.key) + "` | " +
                      mbs::rt::default_text(spec) + " |";
    EXPECT_NE(doc.find(row), std::string::npos) << "docs/solvers.md lacks the row " << row;
  }
}

}  // namespace
