// mbsc's help, man page, bash completion and docs/cli.md against its one option table
// (tools/mbsc/Options.h, Help.h): every option and subcommand is in each, the installed man page
// and completion are the ones the table generates, the defaults that help texts state are the
// options' real defaults, and the completion offers what the model file on the line declares.
#include <gtest/gtest.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "cli_test_util.h"
#include "runtime/io/Home.h"
#include "tools/mbsc/Help.h"
#include "tools/mbsc/Options.h"

namespace {

namespace fs = std::filesystem;
using mbs::clitest::mbsc;
using mbs::clitest::slurp;

struct Table {
  CLI::App app{mbs::cli::kMainDescription, "mbsc"};
  mbs::cli::MainOptions o;
  Table() { mbs::cli::add_main_options(app, o); }
  // every long name of every option, e.g. "--simulate"
  std::vector<std::string> long_names() {
    std::vector<std::string> v;
    for (const CLI::Option* opt : app.get_options())
      for (const std::string& l : opt->get_lnames()) v.push_back("--" + l);
    return v;
  }
};

// `word` stands in `text` as a word of its own (an option name in a word list).
bool has_word(const std::string& text, const std::string& word) {
  auto part_of_name = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-';
  };
  for (size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) {
    const bool starts = at == 0 || !part_of_name(text[at - 1]);
    const bool ends = at + word.size() == text.size() || !part_of_name(text[at + word.size()]);
    if (starts && ends) return true;
  }
  return false;
}

std::string roff_name(const std::string& name) {
  std::string s;
  for (char c : name) s += c == '-' ? std::string("\\-") : std::string(1, c);
  return s;
}

TEST(MbscHelp, EveryOptionAndSubcommandIsInTheHelpTheManPageTheCompletionAndTheDocs) {
  Table t;
  const mbs::clitest::Result help = mbsc("--help");
  ASSERT_EQ(help.code, 0) << help.err;
  const std::string man = mbs::cli::man_page(t.app);
  const std::string completion = mbs::cli::bash_completion(t.app);
  const std::string cli_md = slurp(std::string(MBS_SOURCE_DIR) + "/docs/cli.md");
  const std::vector<std::string> names = t.long_names();
  ASSERT_GT(names.size(), 80u);
  for (const std::string& n : names) {
    EXPECT_TRUE(has_word(help.out, n)) << n << " is not in mbsc --help";
    EXPECT_NE(man.find("\\fB" + roff_name(n) + "\\fR"), std::string::npos)
        << n << " is not in the man page";
    EXPECT_TRUE(has_word(completion, n)) << n << " is not in the completion";
    // the solver options are documented in docs/solvers.md (test_docs checks them)
    const CLI::Option* opt = t.app.get_option_no_throw(n);
    if (opt != nullptr && opt->get_group() != "Solver options" && n != "--help" &&
        n != "--version") {
      EXPECT_NE(cli_md.find("`" + n), std::string::npos) << n << " is not in docs/cli.md";
    }
  }
  for (const mbs::cli::Subcommand& c : mbs::cli::subcommands()) {
    EXPECT_NE(help.out.find(std::string("mbsc ") + c.name), std::string::npos) << c.name;
    EXPECT_NE(man.find(std::string("mbsc ") + c.name), std::string::npos) << c.name;
    EXPECT_NE(completion.find(c.name), std::string::npos) << c.name;
    EXPECT_NE(cli_md.find(std::string("mbsc ") + c.name), std::string::npos) << c.name;
  }
  for (const mbs::cli::ExitCode& e : mbs::cli::exit_codes())
    EXPECT_NE(help.out.find(e.meaning), std::string::npos) << "exit code " << e.code;
}

// The man page and completion of the build (what `cmake --install` installs) are the ones the
// option table of this build generates: nobody edited them, nothing went stale.
TEST(MbscHelp, TheBuiltManPageAndCompletionAreGeneratedFromTheTable) {
  Table t;
  const std::string root = mbs::rt::install_home().root;
  ASSERT_FALSE(root.empty()) << mbs::rt::install_home().explain();
  EXPECT_EQ(slurp(root + "/share/man/man1/mbsc.1"), mbs::cli::man_page(t.app));
  EXPECT_EQ(slurp(root + "/share/bash-completion/completions/mbsc"),
            mbs::cli::bash_completion(t.app));
}

// A help text that states a default states the real one: "(default 3)" of --progress-interval
// is the value the option holds when it is not given.
TEST(MbscHelp, DefaultsInHelpTextsAreTheOptionsDefaults) {
  Table t;
  int compared = 0;
  for (CLI::Option* opt : t.app.get_options()) {
    // "(default 3)" or "(default: 3)": a number alone (not "(default 200 per variable)", a rule)
    const std::string& d = opt->get_description();
    const size_t at = d.find("(default");
    if (at == std::string::npos) continue;
    size_t from = at + 8;
    if (from < d.size() && d[from] == ':') ++from;
    if (from >= d.size() || d[from] != ' ') continue;
    const size_t close = d.find(')', from);
    if (close == std::string::npos) continue;
    const std::string stated = d.substr(from + 1, close - from - 1);
    char* stated_end = nullptr;
    const double stated_value = std::strtod(stated.c_str(), &stated_end);
    if (stated.empty() || *stated_end != '\0') continue;
    opt->capture_default_str();
    const std::string actual = opt->get_default_str();
    if (actual.empty()) continue;  // a solver option: its text comes from the table itself
    char* end = nullptr;
    const double value = std::strtod(actual.c_str(), &end);
    ASSERT_TRUE(end != actual.c_str()) << opt->get_name() << " default '" << actual << "'";
    EXPECT_DOUBLE_EQ(stated_value, value) << opt->get_name() << ": the help says (default "
                                          << stated << "), the default is " << actual;
    ++compared;
  }
  EXPECT_GE(compared, 8);
}

TEST(MbscHelp, MethodHelpSaysGradientsAreExactByDefault) {
  Table t;
  const std::string d = t.app.get_option("--method")->get_description();
  EXPECT_NE(d.find("exact sensitivities"), std::string::npos) << d;
  EXPECT_EQ(t.o.study.sensitivity_method, "exact");
}

// Runs the completion function in bash for a command line whose last word is being completed;
// returns the offered words, one per line.
std::string complete(const std::string& line_words) {
  Table t;
  const std::string script = mbs::clitest::tmp("completion.bash");
  { std::ofstream(script) << mbs::cli::bash_completion(t.app); }
  const std::string driver = mbs::clitest::tmp("complete_driver.bash");
  {
    std::ofstream out(driver);
    out << "compopt() { :; }\n"
        << "source '" << script << "'\n"
        << "COMP_WORDS=(" << line_words << ")\n"
        << "COMP_CWORD=$((${#COMP_WORDS[@]} - 1))\n"
        << "_mbsc\n"
        << "printf '%s\\n' \"${COMPREPLY[@]}\"\n";
  }
  const std::string out = mbs::clitest::tmp("complete_out.txt");
  const std::string cmd = "cd '" + std::string(MBS_SOURCE_DIR) + "' && MBS_CACHE_DIR='" +
                          mbs::clitest::tmp("cache") + "' bash '" + driver + "' >'" + out + "'";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  return slurp(out);
}

std::set<std::string> lines(const std::string& s) {
  std::set<std::string> v;
  std::stringstream in(s);
  std::string l;
  while (std::getline(in, l))
    if (!l.empty()) v.insert(l);
  return v;
}

TEST(MbscCompletion, OptionsChoicesFilesAndNamesFromTheModel) {
  const std::string mbsc_path = std::string("'") + MBS_MBSC_PATH + "'";
  EXPECT_TRUE(lines(complete(mbsc_path + " examples/pendulum.mbs --sol")).count("--solver"));
  const auto solvers = lines(complete(mbsc_path + " examples/pendulum.mbs --solver ''"));
  EXPECT_TRUE(solvers.count("gen-alpha") && solvers.count("dopri5")) << solvers.size();
  EXPECT_EQ(lines(complete(mbsc_path + " examples/pendulum.mbs --emit ''")),
            (std::set<std::string>{"ast", "flat", "mech", "dae", "kernels", "ir"}));
  // the pendulum declares m, L, g and the unknowns x, y, lambda
  EXPECT_EQ(lines(complete(mbsc_path + " examples/pendulum.mbs --set ''")),
            (std::set<std::string>{"m=", "L=", "g="}));
  const auto vars = lines(complete(mbsc_path + " examples/pendulum.mbs --start ''"));
  EXPECT_TRUE(vars.count("x=") && vars.count("y=") && !vars.count("m=")) << vars.size();
  EXPECT_EQ(lines(complete(mbsc_path + " examples/pendulum.mbs --model ''")),
            (std::set<std::string>{"Pendulum"}));
  // a model file, and subcommands, as the first word
  const auto first = lines(complete(mbsc_path + " examples/pendul"));
  EXPECT_TRUE(first.count("examples/pendulum.mbs")) << first.size();
  EXPECT_TRUE(lines(complete(mbsc_path + " rep")).count("repl"));
}

}  // namespace
