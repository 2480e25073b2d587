// Every complete model in docs/language.md, docs/mechanics.md and docs/msl.md (a ```modelica or
// ```mbs block starting with `model`, `package`, `connector` or a comment) compiles without
// diagnostics, so the references cannot drift from the compiler. A block of docs/mechanics.md may
// announce a warning with a line `// expect warning: TEXT`: it must then compile with warnings
// only, and each announced TEXT must appear in them.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/driver/Compile.h"
#include "runtime/solvers/Options.h"

namespace {

std::vector<std::string> modelica_blocks(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  std::vector<std::string> blocks;
  std::string line, cur;
  bool inside = false;
  size_t indent = 0;  // of the opening fence (a block inside a list item is indented)
  while (std::getline(in, line)) {
    const size_t first = line.find_first_not_of(' ');
    const std::string_view text =
        first == std::string::npos ? std::string_view() : std::string_view(line).substr(first);
    if (!inside && (text.rfind("```modelica", 0) == 0 || text.rfind("```mbs", 0) == 0)) {
      inside = true;
      indent = first;
      cur.clear();
      continue;
    }
    if (inside && text.rfind("```", 0) == 0) {
      inside = false;
      blocks.push_back(cur);
      continue;
    }
    if (inside)
      cur += (first != std::string::npos && first >= indent ? line.substr(indent)
                                                            : std::string(text)) +
             "\n";
  }
  return blocks;
}

// The texts of the `// expect warning: TEXT` lines of a block.
std::vector<std::string> expected_warnings(const std::string& block) {
  const std::string marker = "// expect warning:";
  std::vector<std::string> out;
  std::istringstream in(block);
  std::string line;
  while (std::getline(in, line)) {
    size_t at = line.find(marker);
    if (at == std::string::npos) continue;
    std::string text = line.substr(at + marker.size());
    size_t first = text.find_first_not_of(' ');
    out.push_back(first == std::string::npos ? "" : text.substr(first));
  }
  return out;
}

// Compiles every complete model of the document; returns how many were compiled.
int compile_complete_models(const std::string& doc, bool allow_expected_warnings) {
  auto blocks = modelica_blocks(std::string(MBS_SOURCE_DIR) + "/docs/" + doc);
  int compiled = 0;
  for (size_t i = 0; i < blocks.size(); ++i) {
    const std::string& b = blocks[i];
    size_t first = b.find_first_not_of(" \n");
    if (first == std::string::npos) continue;
    std::string head = b.substr(first, 8);
    if (head.rfind("model", 0) != 0 && head.rfind("package", 0) != 0 &&
        head.rfind("connector", 0) != 0 && head.rfind("//", 0) != 0)
      continue;
    std::string stem = doc.substr(0, doc.find('.'));
    std::string path = testing::TempDir() + std::to_string(getpid()) + "_" + stem + "_block_" +
                       std::to_string(i) + ".mbs";
    std::ofstream(path) << b;
    mbs::CompileOptions o;
    o.file = path;
    std::ostringstream emit, diag;
    auto r = mbs::compile(o, emit, diag);
    EXPECT_TRUE(r.ok) << doc << " block " << i << ":\n" << b << "\n" << diag.str();
    auto warnings = allow_expected_warnings ? expected_warnings(b) : std::vector<std::string>{};
    if (warnings.empty()) {
      EXPECT_EQ(diag.str(), "") << doc << " block " << i;
    } else {
      EXPECT_EQ(diag.str().find("error:"), std::string::npos) << doc << " block " << i;
      EXPECT_NE(diag.str().find("warning:"), std::string::npos) << doc << " block " << i;
      for (const auto& w : warnings)
        EXPECT_NE(diag.str().find(w), std::string::npos)
            << doc << " block " << i << " should warn '" << w << "', got:\n"
            << diag.str();
    }
    ++compiled;
  }
  return compiled;
}

TEST(Docs, EveryCompleteModelInTheLanguageReferenceCompiles) {
  EXPECT_GE(compile_complete_models("language.md", false), 8);
}

TEST(Docs, EveryCompleteModelInTheMechanicsReferenceCompiles) {
  EXPECT_GE(compile_complete_models("mechanics.md", true), 8);
}

TEST(Docs, EveryCompleteModelInTheMslMappingCompiles) {
  EXPECT_GE(compile_complete_models("msl.md", false), 1);
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
