#include "tools/mbsc/Help.h"

#include <fmt/format.h>

#include <cctype>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "compiler/diag/Diagnostics.h"
#include "compiler/driver/Compile.h"
#include "compiler/syntax/Parser.h"
#include "runtime/io/AtomicFile.h"
#include "runtime/io/InputFile.h"
#include "tools/mbsc/Analyses.h"
#include "tools/mbsc/Options.h"

namespace mbs::cli {

namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string s;
  for (const std::string& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

// "--a, -b" of an option: its long names first.
std::vector<std::string> names_of(const CLI::Option& opt) {
  std::vector<std::string> n;
  for (const std::string& l : opt.get_lnames()) n.push_back("--" + l);
  for (const std::string& s : opt.get_snames()) n.push_back("-" + s);
  return n;
}

bool takes_value(const CLI::Option& opt) {
  return opt.get_items_expected_max() > 0;
}

// troff text: backslashes, hyphens (so that options render and search as typed), and a line
// start that would read as a request.
std::string roff(const std::string& s) {
  std::string out;
  bool line_start = true;
  for (char c : s) {
    if (line_start && (c == '.' || c == '\'')) out += "\\&";
    if (c == '\\')
      out += "\\e";
    else if (c == '-')
      out += "\\-";
    else
      out += c;
    line_start = c == '\n';
  }
  return out;
}

std::string type_label(const CLI::Option& opt) {
  std::string t = opt.get_type_name();
  // CLI11 appends a check's description, e.g. "TEXT:{tree,bodies}"
  if (const size_t brace = t.find(":{"); brace != std::string::npos) {
    std::string choices = t.substr(brace + 2);
    if (!choices.empty() && choices.back() == '}') choices.pop_back();
    return join(split(choices, ','), "|");
  }
  if (const size_t colon = t.find(':'); colon != std::string::npos) t = t.substr(0, colon);
  return t;
}

}  // namespace

OptionValue option_value(const CLI::Option& opt) {
  OptionValue v;
  if (!takes_value(opt)) return v;
  // the value's name in the option table says what it is (tools/mbsc/Options.cpp)
  const std::string label = type_label(opt);
  auto is = [&label](const char* word) {
    const size_t n = std::strlen(word);
    return label.compare(0, n, word) == 0 && (label.size() == n || !std::isalpha(label[n]));
  };
  if (is("PARAMETER")) {
    v.kind = ValueKind::ParameterName;
  } else if (is("VARIABLE")) {
    v.kind = ValueKind::VariableName;
  } else if (is("NAME")) {
    v.kind = ValueKind::AnyName;
  } else if (is("MODEL")) {
    v.kind = ValueKind::ModelName;
  } else if (label.rfind("FILE", 0) == 0) {
    v.kind = ValueKind::File;
    if (const size_t dot = label.find('.'); dot != std::string::npos) {
      std::string ext = label.substr(dot + 1);
      v.extension = ext.substr(0, ext.find('|'));
    }
  } else if (label == "DIR") {
    v.kind = ValueKind::Directory;
  } else if (label.find('|') != std::string::npos && label.find('=') == std::string::npos &&
             label.front() != '[') {
    v.kind = ValueKind::Choice;
    v.choices = join(split(label, '|'), " ");
  } else {
    v.kind = ValueKind::Other;
  }
  return v;
}

std::string man_page(const CLI::App& app) {
  std::ostringstream m;
  m << ".TH MBSC 1 \"\" \"mbs " << MBS_VERSION << "\" \"User Commands\"\n";
  m << ".SH NAME\nmbsc \\- compile and simulate multibody models written in Modelica syntax\n";
  m << ".SH SYNOPSIS\n.B mbsc\n.I FILE.mbs\n[\\fIOPTIONS\\fR]\n.br\n";
  for (const Subcommand& c : subcommands())
    m << ".B mbsc " << c.name << "\n" << roff(c.synopsis) << "\n.br\n";
  m << ".SH DESCRIPTION\n"
       "mbsc compiles a model written in Modelica syntax (bodies, joints, forces, drives, "
       "controllers, plain equations) into native code and, with \\fB\\-\\-simulate\\fR, runs "
       "it; it also solves for static equilibria, linearises, computes eigenvalues, runs inverse "
       "dynamics and studies, and exports FMUs. Without an analysis option it compiles and "
       "checks the model only.\n";
  // options by group, in the order the groups first appear
  std::vector<std::string> groups;
  for (const CLI::Option* o : app.get_options()) {
    if (o->get_positional() || o->get_group().empty()) continue;
    if (std::find(groups.begin(), groups.end(), o->get_group()) == groups.end())
      groups.push_back(o->get_group());
  }
  for (const std::string& g : groups) {
    m << ".SH " << roff(g == "Options" ? std::string("OPTIONS") : g) << "\n";
    for (const CLI::Option* o : app.get_options()) {
      if (o->get_positional() || o->get_group() != g) continue;
      std::vector<std::string> n;
      for (const std::string& x : names_of(*o)) n.push_back("\\fB" + roff(x) + "\\fR");
      std::string head = join(n, ", ");
      if (takes_value(*o)) head += " \\fI" + roff(type_label(*o)) + "\\fR";
      m << ".TP\n" << head << "\n" << roff(o->get_description()) << "\n";
    }
  }
  m << ".SH SUBCOMMANDS\n";
  for (const Subcommand& c : subcommands())
    m << ".TP\n\\fBmbsc " << c.name << "\\fR " << roff(c.synopsis) << "\n"
      << roff(c.summary) << "\n";
  m << ".SH ENVIRONMENT\n"
       ".TP\n\\fBMBS_HOME\\fR\nthe installation prefix: the standard library is read from "
       "$MBS_HOME/share/mbs/stdlib and the FMU runtime from $MBS_HOME/lib/mbs (default: found "
       "relative to the mbsc binary)\n"
       ".TP\n\\fBMBS_PATH\\fR\nlibrary directories (colon separated), searched after \\-I and "
       "before the standard library\n"
       ".TP\n\\fBMBS_CACHE_DIR\\fR\nthe compiled-model cache (default $XDG_CACHE_HOME/mbs or "
       "~/.cache/mbs; \\fBoff\\fR: no cache)\n";
  m << ".SH EXIT STATUS\n";
  for (const ExitCode& e : exit_codes()) m << ".TP\n" << e.code << "\n" << roff(e.meaning) << "\n";
  m << ".SH FILES\n"
       ".TP\n\\fI<prefix>/share/mbs/stdlib\\fR\nthe standard library (Mechanics, Translational)\n"
       ".TP\n\\fI<prefix>/share/doc/mbs\\fR\nthe documentation and the examples\n";
  m << ".SH EXAMPLES\n.nf\nmbsc pendulum.mbs \\-\\-simulate \\-\\-t\\-end 2 \\-\\-output "
       "pendulum.csv\nmbsc hanging_chain.mbs \\-\\-static \\-\\-eigen\nmbsc plot pendulum.csv x y "
       "\\-\\-output pendulum.png\n.fi\n";
  return m.str();
}

std::string bash_completion(const CLI::App& app) {
  std::vector<std::string> all;
  std::map<std::string, OptionValue> valued;
  for (const CLI::Option* o : app.get_options()) {
    if (o->get_positional()) continue;
    for (const std::string& n : names_of(*o)) {
      all.push_back(n);
      if (takes_value(*o)) valued[n] = option_value(*o);
    }
  }
  std::vector<std::string> subs;
  for (const Subcommand& c : subcommands()) subs.push_back(c.name);
  // one case arm per way of completing a value, listing its options
  std::map<std::string, std::vector<std::string>> arms;
  for (const auto& [name, v] : valued) {
    std::string action;
    switch (v.kind) {
      case ValueKind::Choice:
        action = "COMPREPLY=($(compgen -W \"" + v.choices + "\" -- \"$cur\"))";
        break;
      case ValueKind::File:
        action = "_mbsc_files " + (v.extension.empty() ? std::string("''") : v.extension);
        break;
      case ValueKind::Directory:
        action = "COMPREPLY=($(compgen -d -- \"$cur\"))";
        break;
      case ValueKind::ParameterName:
        action = "_mbsc_names parameters";
        break;
      case ValueKind::VariableName:
        action = "_mbsc_names variables";
        break;
      case ValueKind::AnyName:
        action = "_mbsc_names names";
        break;
      case ValueKind::ModelName:
        action = "_mbsc_names models";
        break;
      default:
        action = ":";  // a number or free text: nothing to offer
    }
    arms[action].push_back(name);
  }
  std::ostringstream s;
  s << "# bash completion of mbsc, generated by `mbsc __generate bash-completion` from its option\n"
       "# table (tools/mbsc/Options.cpp). Installed in share/bash-completion/completions/mbsc.\n\n"
       "_mbsc_files() {  # files with the extension $1 (any with ''), and folders\n"
       "  local ext=$1\n"
       "  compopt -o filenames 2>/dev/null\n"
       "  if [[ -n $ext ]]; then\n"
       "    COMPREPLY=($(compgen -f -X \"!*.$ext\" -- \"$cur\") $(compgen -d -- \"$cur\"))\n"
       "  else\n"
       "    COMPREPLY=($(compgen -f -- \"$cur\"))\n"
       "  fi\n"
       "}\n\n"
       "_mbsc_names() {  # models, parameters, variables or names of the model file on the line\n"
       "  local what=$1 file='' i args=()\n"
       "  for ((i = 1; i < ${#COMP_WORDS[@]}; i++)); do\n"
       "    [[ $i -eq $COMP_CWORD ]] && continue\n"
       "    case ${COMP_WORDS[i]} in\n"
       "      *.mbs) [[ -z $file ]] && file=${COMP_WORDS[i]} ;;\n"
       "      --model | -I)\n"
       "        if ((i + 1 < COMP_CWORD)); then args+=(\"${COMP_WORDS[i]}\" \"${COMP_WORDS[i + "
       "1]}\"); fi ;;\n"
       "    esac\n"
       "  done\n"
       "  [[ -z $file ]] && return\n"
       "  file=${file/#\\~/$HOME}\n"
       "  local list\n"
       "  list=$(\"${COMP_WORDS[0]}\" __complete \"$what\" \"$file\" \"${args[@]}\" "
       "2>/dev/null) || return\n"
       "  if [[ $what == models ]]; then\n"
       "    COMPREPLY=($(compgen -W \"$list\" -- \"$cur\"))\n"
       "  else\n"
       "    local n\n"
       "    for n in $list; do [[ $n == \"$cur\"* ]] && COMPREPLY+=(\"$n=\"); done\n"
       "    compopt -o nospace 2>/dev/null\n"
       "  fi\n"
       "}\n\n"
       "_mbsc() {\n"
       "  local cur=${COMP_WORDS[COMP_CWORD]} prev=''\n"
       "  COMPREPLY=()\n"
       "  ((COMP_CWORD > 0)) && prev=${COMP_WORDS[COMP_CWORD - 1]}\n"
       "  # --option=value: bash splits at '=' (COMP_WORDBREAKS)\n"
       "  if [[ $prev == = ]] && ((COMP_CWORD > 1)); then prev=${COMP_WORDS[COMP_CWORD - 2]}; fi\n"
       "  if [[ $cur == = ]]; then cur=''; fi\n"
       "  if ((COMP_CWORD > 1)); then\n"
       "    case ${COMP_WORDS[1]} in\n"
       "      plot) _mbsc_files csv; return ;;\n"
       "      monitor) _mbsc_files csv; return ;;\n"
       "      repl) _mbsc_files mbs; return ;;\n"
       "    esac\n"
       "  fi\n"
       "  case $prev in\n";
  for (const auto& [action, names] : arms)
    s << "    " << join(names, " | ") << ")\n      " << action << "\n      return ;;\n";
  s << "  esac\n"
       "  if [[ $cur == -* ]]; then\n"
       "    COMPREPLY=($(compgen -W \""
    << join(all, " ")
    << "\" -- \"$cur\"))\n"
       "    return\n"
       "  fi\n"
       "  _mbsc_files mbs\n"
       "  if ((COMP_CWORD == 1)); then COMPREPLY+=($(compgen -W \""
    << join(subs, " ")
    << "\" -- \"$cur\")); fi\n"
       "}\n"
       "complete -F _mbsc mbsc\n";
  return s.str();
}

int generate_command(int argc, char** argv) {
  if (argc != 3 || (std::string(argv[1]) != "man" && std::string(argv[1]) != "bash-completion")) {
    std::cerr << "usage: mbsc __generate man|bash-completion FILE\n";
    return kExitUsage;
  }
  CLI::App app{kMainDescription, "mbsc"};
  MainOptions o;
  add_main_options(app, o);
  const std::string text = std::string(argv[1]) == "man" ? man_page(app) : bash_completion(app);
  try {
    rt::write_file_atomically(argv[2], text);
  } catch (const std::exception& e) {
    std::cerr << "mbsc: error: " << e.what() << "\n";
    return kExitUsage;
  }
  return kExitOk;
}

int complete_command(int argc, char** argv) {
  if (argc < 3) return kExitUsage;
  const std::string what = argv[1];
  CompileOptions copts;
  copts.file = argv[2];
  for (int i = 3; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--model") copts.model = argv[i + 1];
    if (a == "-I") copts.include_dirs.push_back(argv[i + 1]);
  }
  if (what == "models") {
    std::string why;  // bounded: completion must not hang the shell on /dev/zero or a FIFO
    std::optional<std::string> text =
        rt::read_input_file(copts.file, rt::kSourceFileLimit, "model file", why);
    if (!text) return kExitUsage;
    SourceManager sources;
    DiagnosticEngine diags(sources);
    const uint32_t id = sources.add_file(copts.file, std::move(*text));
    const auto file = parse_file(sources, id, diags);
    if (!file) return kExitModelError;
    for (const auto& c : file->classes)
      if (c->kind == ast::ClassKind::Model || c->kind == ast::ClassKind::Class)
        std::cout << c->name << "\n";
    return kExitOk;
  }
  if (what != "parameters" && what != "variables" && what != "names") return kExitUsage;
  std::ostringstream quiet_out, quiet_err;
  const CompileResult r = compile(copts, quiet_out, quiet_err);
  if (!r.ok || !r.model) return kExitModelError;
  std::set<std::string> parameters;
  for (const auto& p : r.model->parameters) parameters.insert(p.name);
  if (what != "variables")
    for (const std::string& p : parameters) std::cout << p << "\n";
  if (what != "parameters")
    for (const std::string& n : r.model->output_names)
      if (parameters.count(n) == 0) std::cout << n << "\n";
  return kExitOk;
}

}  // namespace mbs::cli
