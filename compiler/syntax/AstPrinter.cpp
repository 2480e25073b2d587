// Text forms of the AST: expr_to_string (fully parenthesised Modelica) and print_ast (an indented
// tree with line:col, for `mbsc --emit=ast` and the parser's tests).
#include <fmt/format.h>

#include <cmath>
#include <ostream>

#include "compiler/syntax/Parser.h"

namespace mbs {
namespace {

// Concatenation by appending: GCC 12 reports false -Wrestrict errors for `"literal" + string`.
template <class... Parts>
std::string cat(const Parts&... parts) {
  std::string out;
  (out.append(parts), ...);
  return out;
}

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        out += c;
    }
  }
  return out + "\"";
}

std::string number_to_string(const ast::Expr& e) {
  if (e.is_integer && std::fabs(e.number) < 1e15) {
    return fmt::format("{}", static_cast<long long>(e.number));
  }
  std::string s = fmt::format("{}", e.number);  // shortest text that reads back the same
  if (!e.is_integer && s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

std::string list(const std::vector<ast::ExprPtr>& v) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i > 0) out += ", ";
    out += v[i] ? expr_to_string(*v[i]) : "<null>";
  }
  return out;
}

std::string ref_to_string(const std::vector<ast::RefPart>& ref) {
  std::string out;
  for (size_t i = 0; i < ref.size(); ++i) {
    if (i > 0) out += '.';
    out += ref[i].name;
    if (!ref[i].subscripts.empty()) out += cat("[", list(ref[i].subscripts), "]");
  }
  return out;
}

std::string arg(const ast::Expr& e, size_t i) {
  return i < e.args.size() && e.args[i] ? expr_to_string(*e.args[i]) : "<null>";
}

// ` for i in (1:3), j in {1, 2}`
std::string iterators_to_string(const std::vector<ast::ForIndex>& its) {
  std::string out = " for ";
  for (size_t i = 0; i < its.size(); ++i) {
    out += cat(i > 0 ? ", " : "", its[i].name, " in ",
               its[i].range ? expr_to_string(*its[i].range) : "<null>");
  }
  return out;
}

std::string filter_to_string(const ast::Expr& e) {
  return e.filter ? cat(" if ", expr_to_string(*e.filter)) : std::string();
}

std::string location(const Span& s) {
  return fmt::format("@{}:{}", s.line, s.col);
}

std::string dims(const std::vector<ast::ExprPtr>& v) {
  return v.empty() ? std::string() : cat("[", list(v), "]");
}

const char* variability_name(ast::Variability v) {
  switch (v) {
    case ast::Variability::Parameter:
      return "parameter ";
    case ast::Variability::Constant:
      return "constant ";
    case ast::Variability::Discrete:
      return "discrete ";
    case ast::Variability::Continuous:
      break;
  }
  return "";
}

const char* causality_name(ast::Causality c) {
  switch (c) {
    case ast::Causality::Input:
      return "input ";
    case ast::Causality::Output:
      return "output ";
    case ast::Causality::None:
      break;
  }
  return "";
}

void indent(std::ostream& os, int level) {
  for (int i = 0; i < level; ++i) os << "  ";
}

// " (mods) = value" with the leading space, or nothing.
std::string mod_suffix(const ast::Modification* m) {
  return m != nullptr ? cat(" ", modification_to_string(*m)) : std::string();
}

std::string description(const std::string& d) {
  return d.empty() ? "" : cat(" ", quoted(d));
}

void print_equations(std::ostream& os, const ast::EquationList& eqs, int level);

void print_equation(std::ostream& os, const ast::Equation& eq, int level) {
  indent(os, level);
  switch (eq.kind) {
    case ast::EquationKind::Simple:
      os << "equation " << location(eq.span) << ' ' << (eq.lhs ? expr_to_string(*eq.lhs) : "")
         << " = " << (eq.rhs ? expr_to_string(*eq.rhs) : "") << description(eq.description) << "\n";
      return;
    case ast::EquationKind::Outputs:
      os << "equation " << location(eq.span) << " (";
      for (size_t i = 0; i < eq.targets.size(); ++i)
        os << (i ? ", " : "") << (eq.targets[i] ? expr_to_string(*eq.targets[i]) : "");
      os << ") = " << (eq.rhs ? expr_to_string(*eq.rhs) : "") << description(eq.description)
         << "\n";
      return;
    case ast::EquationKind::Connect:
      os << "connect " << location(eq.span) << ' ' << (eq.lhs ? expr_to_string(*eq.lhs) : "")
         << ", " << (eq.rhs ? expr_to_string(*eq.rhs) : "") << description(eq.description) << "\n";
      return;
    case ast::EquationKind::For:
      os << "for " << location(eq.span);
      for (size_t i = 0; i < eq.indices.size(); ++i) {
        os << (i == 0 ? " " : ", ") << eq.indices[i].name << " in "
           << (eq.indices[i].range ? expr_to_string(*eq.indices[i].range) : "");
      }
      os << description(eq.description) << "\n";
      print_equations(os, eq.body, level + 1);
      return;
    case ast::EquationKind::If:
      for (size_t i = 0; i < eq.branches.size(); ++i) {
        if (i > 0) indent(os, level);
        if (i < eq.conditions.size()) {
          os << (i == 0 ? cat("if ", location(eq.span), " ") : std::string("elseif "))
             << (eq.conditions[i] ? expr_to_string(*eq.conditions[i]) : "");
          if (i == 0) os << description(eq.description);
        } else {
          os << "else";
        }
        os << "\n";
        print_equations(os, eq.branches[i], level + 1);
      }
      return;
    case ast::EquationKind::When:
      for (size_t i = 0; i < eq.branches.size(); ++i) {
        if (i > 0) indent(os, level);
        os << (i == 0 ? cat("when ", location(eq.span), " ") : std::string("elsewhen "))
           << (i < eq.conditions.size() && eq.conditions[i] ? expr_to_string(*eq.conditions[i])
                                                            : "");
        if (i == 0) os << description(eq.description);
        os << "\n";
        print_equations(os, eq.branches[i], level + 1);
      }
      return;
    case ast::EquationKind::Call:
      os << "call " << location(eq.span) << ' ' << (eq.rhs ? expr_to_string(*eq.rhs) : "")
         << description(eq.description) << "\n";
      return;
  }
}

void print_equations(std::ostream& os, const ast::EquationList& eqs, int level) {
  for (const auto& eq : eqs) print_equation(os, eq, level);
}

void print_statements(std::ostream& os, const ast::StatementList& list, int level) {
  for (const auto& st : list) {
    indent(os, level);
    switch (st.kind) {
      case ast::StatementKind::Assign:
        os << "assign " << location(st.span) << ' ' << (st.target ? expr_to_string(*st.target) : "")
           << " := " << (st.value ? expr_to_string(*st.value) : "") << "\n";
        break;
      case ast::StatementKind::MultiAssign: {
        os << "assign " << location(st.span) << " (";
        for (size_t i = 0; i < st.targets.size(); ++i)
          os << (i ? ", " : "") << (st.targets[i] ? expr_to_string(*st.targets[i]) : "");
        os << ") := " << (st.value ? expr_to_string(*st.value) : "") << "\n";
        break;
      }
      case ast::StatementKind::Return:
        os << "return " << location(st.span) << "\n";
        break;
      case ast::StatementKind::Call:
        os << "call " << location(st.span) << ' ' << (st.value ? expr_to_string(*st.value) : "")
           << "\n";
        break;
      case ast::StatementKind::Break:
        os << "break " << location(st.span) << "\n";
        break;
      case ast::StatementKind::For:
        os << "for " << location(st.span);
        for (size_t i = 0; i < st.indices.size(); ++i) {
          os << (i == 0 ? " " : ", ") << st.indices[i].name << " in "
             << (st.indices[i].range ? expr_to_string(*st.indices[i].range) : "");
        }
        os << "\n";
        print_statements(os, st.body, level + 1);
        break;
      case ast::StatementKind::While:
        os << "while " << location(st.span) << ' '
           << (st.conditions.at(0) ? expr_to_string(*st.conditions[0]) : "") << "\n";
        print_statements(os, st.body, level + 1);
        break;
      case ast::StatementKind::If:
        for (size_t i = 0; i < st.branches.size(); ++i) {
          if (i > 0) indent(os, level);
          if (i < st.conditions.size()) {
            os << (i == 0 ? cat("if ", location(st.span), " ") : std::string("elseif "))
               << (st.conditions[i] ? expr_to_string(*st.conditions[i]) : "");
          } else {
            os << "else";
          }
          os << "\n";
          print_statements(os, st.branches[i], level + 1);
        }
        break;
    }
  }
}

void print_class(std::ostream& os, const ast::ClassDef& c, int level) {
  indent(os, level);
  os << ast::class_kind_name(c.kind) << ' ' << c.name << ' ' << location(c.span);
  if (!c.short_base.empty())
    os << " = " << c.short_base << (c.short_mod ? modification_to_string(*c.short_mod) : "");
  if (c.is_enumeration) {
    os << " = enumeration(";
    for (size_t i = 0; i < c.enum_literals.size(); ++i) os << (i ? ", " : "") << c.enum_literals[i];
    os << (c.enumeration_open ? ":" : "") << ")";
  }
  os << description(c.description) << "\n";
  for (const auto& i : c.imports) {
    indent(os, level + 1);
    os << "import ";
    if (!i.alias.empty()) os << i.alias << " = ";
    os << i.path << (i.wildcard ? ".*" : "") << ' ' << location(i.span) << "\n";
  }
  for (const auto& e : c.extends) {
    indent(os, level + 1);
    os << "extends " << e.base << ' ' << location(e.span) << mod_suffix(e.mod.get()) << "\n";
  }
  for (const auto& nested : c.classes) print_class(os, *nested, level + 1);
  for (const auto& comp : c.components) {
    indent(os, level + 1);
    os << "component " << (comp.is_protected ? "protected " : "")
       << variability_name(comp.variability) << causality_name(comp.causality)
       << (comp.flow ? "flow " : "") << (comp.stream ? "stream " : "") << comp.type_name
       << dims(comp.type_dims) << ' ' << comp.name << dims(comp.dims) << ' ' << location(comp.span)
       << mod_suffix(comp.mod.get())
       << (comp.condition ? " if " + expr_to_string(*comp.condition) : std::string())
       << description(comp.description) << "\n";
  }
  print_equations(os, c.equations, level + 1);
  if (!c.initial_equations.empty()) {
    indent(os, level + 1);
    os << "initial equation\n";
    print_equations(os, c.initial_equations, level + 2);
  }
  if (!c.algorithm.empty()) {
    indent(os, level + 1);
    os << "algorithm\n";
    print_statements(os, c.algorithm, level + 2);
  }
  if (!c.initial_algorithm.empty()) {
    indent(os, level + 1);
    os << "initial algorithm\n";
    print_statements(os, c.initial_algorithm, level + 2);
  }
}

}  // namespace

std::string expr_to_string(const ast::Expr& e) {
  switch (e.kind) {
    case ast::ExprKind::Number:
      return number_to_string(e);
    case ast::ExprKind::Bool:
      return e.boolean ? "true" : "false";
    case ast::ExprKind::String:
      return quoted(e.text);
    case ast::ExprKind::Ref:
      return ref_to_string(e.ref);
    case ast::ExprKind::Call: {
      if (e.arg_names.empty()) return cat(ref_to_string(e.ref), "(", list(e.args), ")");
      std::string out = ref_to_string(e.ref) + "(";
      for (size_t i = 0; i < e.args.size(); ++i) {
        if (i > 0) out += ", ";
        if (i < e.arg_names.size() && !e.arg_names[i].empty()) out += e.arg_names[i] + " = ";
        out += e.args[i] ? expr_to_string(*e.args[i]) : "";
      }
      return out + ")";
    }
    case ast::ExprKind::Unary:
      return cat("(", e.op, e.op == "not" ? " " : "", arg(e, 0), ")");
    case ast::ExprKind::Binary:
      return cat("(", arg(e, 0), " ", e.op, " ", arg(e, 1), ")");
    case ast::ExprKind::If: {
      std::string out = "(if ";
      size_t i = 0;
      for (; i + 1 < e.args.size(); i += 2) {
        out += cat(i == 0 ? "" : " elseif ", arg(e, i), " then ", arg(e, i + 1));
      }
      return cat(out, " else ", arg(e, i), ")");
    }
    case ast::ExprKind::Array:
      return cat("{", list(e.args), "}");
    case ast::ExprKind::Comprehension:
      return cat("{", arg(e, 0), iterators_to_string(e.iterators), filter_to_string(e), "}");
    case ast::ExprKind::Reduction:
      return cat(ref_to_string(e.ref), "(", arg(e, 0), iterators_to_string(e.iterators),
                 filter_to_string(e), ")");
    case ast::ExprKind::Matrix: {
      std::string out = "[";
      for (size_t r = 0; r < e.rows.size(); ++r) {
        if (r > 0) out += "; ";
        out += list(e.rows[r]);
      }
      return out + "]";
    }
    case ast::ExprKind::Range: {
      std::string out = "(";
      for (size_t i = 0; i < e.args.size(); ++i) out += cat(i > 0 ? ":" : "", arg(e, i));
      return out + ")";
    }
    case ast::ExprKind::Colon:
      return ":";
    case ast::ExprKind::End:
      return "end";
  }
  return "<?>";
}

std::string modification_to_string(const ast::Modification& m) {
  std::string out;
  if (!m.args.empty() || !m.value) {
    out += "(";
    for (size_t i = 0; i < m.args.size(); ++i) {
      const ast::ModArg& a = m.args[i];
      if (i > 0) out += ", ";
      if (a.each) out += "each ";
      if (a.final_) out += "final ";
      for (size_t k = 0; k < a.path.size(); ++k) out += cat(k > 0 ? "." : "", a.path[k]);
      if (a.mod) {
        std::string sub = modification_to_string(*a.mod);
        out += sub.rfind("=", 0) == 0 ? cat(" ", sub) : sub;
      }
    }
    out += ")";
  }
  if (m.value) out += cat(out.empty() ? "= " : " = ", expr_to_string(*m.value));
  return out;
}

void print_ast(std::ostream& os, const ast::File& file) {
  if (!file.within.empty()) os << "within " << file.within << "\n";
  for (const auto& c : file.classes) print_class(os, *c, 0);
}

}  // namespace mbs
