#include "compiler/driver/Objectives.h"

#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <sstream>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "compiler/codegen/Jit.h"
#include "compiler/diag/Diagnostics.h"
#include "compiler/symbolic/Expr.h"
#include "compiler/syntax/Parser.h"
#include "runtime/io/Csv.h"
#include "runtime/io/InputFile.h"
#include "runtime/io/Suggest.h"

namespace mbs {

namespace {

// The code of all objectives of one compile_objectives() call: kept alive by each Objective.
struct ObjectiveCode {
  sym::Context cx;
  std::unique_ptr<codegen::JitModule> jit;
};

constexpr std::pair<std::string_view, rt::Reduction> kReductions[] = {
    {"final", rt::Reduction::Final}, {"max", rt::Reduction::Max},
    {"min", rt::Reduction::Min},     {"maxabs", rt::Reduction::MaxAbs},
    {"mean", rt::Reduction::Mean},   {"integral", rt::Reduction::Integral},
    {"rms", rt::Reduction::Rms},     {"l2", rt::Reduction::L2},
    {"fit", rt::Reduction::Fit},
};
constexpr const char* kReductionList =
    "the reductions are final, max, min, maxabs, mean, integral, rms, l2 and "
    "fit(expression, \"data.csv\")";

std::optional<rt::Reduction> reduction_of(std::string_view name) {
  for (const auto& [n, r] : kReductions)
    if (n == name) return r;
  return std::nullopt;
}

// The reduction a misspelt or differently named one probably means; "" when none. Reduction
// names are short, so a misspelling may cost one edit in three (`integal`, `maxbas`), and
// the usual other names are known.
std::string reduction_meant(std::string_view name) {
  static const std::map<std::string, std::string, std::less<>> other_names = {
      {"maximum", "max"}, {"minimum", "min"}, {"average", "mean"}, {"last", "final"}};
  if (auto it = other_names.find(name); it != other_names.end()) return it->second;
  std::vector<std::string> names;
  for (const auto& [n, r] : kReductions) names.emplace_back(n);
  return rt::meant_name(name, names, 1);
}

const std::map<std::string, sym::Op, std::less<>>& unary_functions() {
  static const std::map<std::string, sym::Op, std::less<>> f = {
      {"sin", sym::Op::Sin},   {"cos", sym::Op::Cos},   {"tan", sym::Op::Tan},
      {"asin", sym::Op::Asin}, {"acos", sym::Op::Acos}, {"atan", sym::Op::Atan},
      {"sinh", sym::Op::Sinh}, {"cosh", sym::Op::Cosh}, {"tanh", sym::Op::Tanh},
      {"exp", sym::Op::Exp},   {"log", sym::Op::Log},   {"log10", sym::Op::Log10},
      {"sqrt", sym::Op::Sqrt}, {"abs", sym::Op::Abs},   {"sign", sym::Op::Sign}};
  return f;
}

std::vector<std::string> function_names() {
  std::vector<std::string> names;
  for (const auto& [n, op] : unary_functions()) names.push_back(n);
  for (const char* n : {"atan2", "min", "max", "der"}) names.emplace_back(n);
  return names;
}

// The candidate nearest to `name` when it is close enough to be what was meant (at most a
// third of the name wrong, as rt::Instance decides it); "" otherwise.
std::string suggestion(std::string_view name, const std::vector<std::string>& candidates) {
  return rt::meant_name(name, candidates);
}

Span join(Span first, const Span& last) {
  first.end_line = last.end_line;
  first.end_col = last.end_col;
  return first;
}

Span name_span(const std::vector<ast::RefPart>& ref) {
  return ref.empty() ? Span{} : join(ref.front().span, ref.back().span);
}

std::string dotted(const std::vector<ast::RefPart>& ref) {
  std::string s;
  for (size_t i = 0; i < ref.size(); ++i) s += (i ? "." : "") + ref[i].name;
  return s;
}

// Code points in s (what a column counts; a byte that is not UTF-8 counts as one).
uint32_t columns(std::string_view s) {
  uint32_t n = 0;
  for (size_t i = 0; i < s.size(); ++n) {
    size_t len = utf8_sequence_length(s, i);
    i += len == 0 ? 1 : len;
  }
  return n;
}

// The span of field `k` of a CSV line (quotes respected, blanks around it left out); the whole
// line when it has no such field.
Span field_span(uint32_t file, uint32_t line_no, std::string_view line, size_t k) {
  size_t begin = 0, end = line.size(), field = 0;
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '"') {
      quoted = !quoted;
    } else if (line[i] == ',' && !quoted) {
      if (field == k) {
        end = i;
        break;
      }
      ++field;
      begin = i + 1;
    }
  }
  if (field < k) {
    begin = 0;
    end = line.size();
  }
  while (begin < end && (line[begin] == ' ' || line[begin] == '\t')) ++begin;
  while (end > begin && (line[end - 1] == ' ' || line[end - 1] == '\t')) --end;
  const uint32_t col = columns(line.substr(0, begin)) + 1;
  const uint32_t width = columns(line.substr(begin, end - begin));
  return Span{file, line_no, col, line_no, col + (width == 0 ? 0 : width - 1)};
}

// A finite number filling the whole field, or nullopt.
std::optional<double> number(const std::string& field) {
  if (field.empty()) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const double x = std::strtod(field.c_str(), &end);
  if (*end != '\0' || !std::isfinite(x)) return std::nullopt;
  return x;
}

// ------------------------------------------------------------------------------------------------
// The pointwise expression: AST -> symbolic DAG over [time, outputs...]

class Lowering {
 public:
  Lowering(sym::Context& cx, DiagnosticEngine& diags, const rt::CompiledModel& model,
           const std::unordered_map<std::string, uint32_t>& symbol_of)
      : cx_(cx), diags_(diags), model_(model), symbol_of_(symbol_of) {}

  // nullptr when errors were reported (all of them: every operand is lowered).
  sym::Expr lower(const ast::Expr& e) {
    using K = ast::ExprKind;
    switch (e.kind) {
      case K::Number:
        return cx_.num(e.number);
      case K::Bool:
        return cx_.num(e.boolean ? 1.0 : 0.0);
      case K::Ref:
        return reference(e);
      case K::Call:
        return call(e);
      case K::Unary: {
        sym::Expr a = lower(*e.args[0]);
        if (!a) return nullptr;
        if (e.op == "not") return cx_.unary(sym::Op::Not, a);
        return e.op == "-" || e.op == ".-" ? cx_.neg(a) : a;
      }
      case K::Binary:
        return binary(e);
      case K::If: {
        // if c1 then a1 elseif c2 then a2 else b   (args: c1, a1, c2, a2, ..., b)
        std::vector<sym::Expr> args;
        for (const auto& a : e.args) args.push_back(lower(*a));
        for (sym::Expr a : args)
          if (!a) return nullptr;
        sym::Expr r = args.back();
        for (size_t i = args.size() - 1; i >= 2; i -= 2)
          r = cx_.select(args[i - 2], args[i - 1], r);
        return r;
      }
      case K::String:
        diags_.report(DiagKind::objective_form, e.span,
                      {"a string is not a value: strings only name the data file and column of "
                       "fit(expression, \"data.csv\", \"column\")"});
        return nullptr;
      case K::Array:
      case K::Matrix:
      case K::Comprehension:
        diags_.report(DiagKind::unsupported, e.span, {"an array in an objective"});
        diags_.help("an objective reduces one number per output row; name one element, e.g. x[1]");
        return nullptr;
      case K::Range:
      case K::Colon:
      case K::End:
        diags_.report(DiagKind::unsupported, e.span, {"a range or 'end' in an objective"});
        return nullptr;
      case K::Reduction:
        diags_.report(DiagKind::unsupported, e.span,
                      {"a reduction over an iterator ('f(... for ...)') in an objective"});
        return nullptr;
    }
    return nullptr;
  }

  // The column name a reference stands for, as in the result file: `b.frame_a.r[1]`,
  // `R[1,2]`; nullopt after reporting a subscript that is not an integer number.
  std::optional<std::string> column_name(const std::vector<ast::RefPart>& ref) {
    std::string name;
    bool ok = true;
    for (size_t i = 0; i < ref.size(); ++i) {
      name += (i ? "." : "") + ref[i].name;
      if (ref[i].subscripts.empty()) continue;
      name += "[";
      for (size_t k = 0; k < ref[i].subscripts.size(); ++k) {
        const ast::Expr& s = *ref[i].subscripts[k];
        if (s.kind != ast::ExprKind::Number || !s.is_integer || s.number < 1) {
          diags_.report(DiagKind::bad_subscript, s.span,
                        {"a subscript in an objective must be a whole number from 1 on, as the "
                         "result file's column names have"});
          ok = false;
          continue;
        }
        name += (k ? "," : "") + fmt::format("{}", s.number);
      }
      name += "]";
    }
    if (!ok) return std::nullopt;
    return name;
  }

 private:
  sym::Expr reference(const ast::Expr& e) {
    if (e.ref.size() == 1 && e.ref[0].name == "time" && e.ref[0].subscripts.empty())
      return cx_.symbol(0);
    auto name = column_name(e.ref);
    if (!name) return nullptr;
    if (auto it = symbol_of_.find(*name); it != symbol_of_.end()) return cx_.symbol(it->second);
    unknown_name(*name, e.span);
    return nullptr;
  }

  void unknown_name(const std::string& name, Span span) {
    diags_.report(DiagKind::objective_unknown_name, span, {name});
    for (const rt::Unknown& p : model_.parameters) {
      if (p.name != name) continue;
      diags_.help("'" + name +
                  "' is a parameter: an objective reads the output columns of a run; write its "
                  "value as a number");
      return;
    }
    // an array or a component: name its elements
    std::vector<std::string> inside;
    for (const std::string& o : model_.output_names)
      if (o.size() > name.size() && o.compare(0, name.size(), name) == 0 &&
          (o[name.size()] == '[' || o[name.size()] == '.'))
        inside.push_back(o);
    if (!inside.empty()) {
      std::string some;
      for (size_t i = 0; i < inside.size() && i < 3; ++i) some += (i ? ", " : "") + inside[i];
      if (inside.size() > 3) some += ", ...";
      diags_.help(
          fmt::format("'{}' has {} outputs ({}): name one of them", name, inside.size(), some));
      return;
    }
    if (std::string s = suggestion(name, model_.output_names); !s.empty())
      diags_.help("did you mean '" + s + "'?");
  }

  sym::Expr call(const ast::Expr& e) {
    const std::string name = dotted(e.ref);
    const Span at = name_span(e.ref);
    const size_t n = e.args.size();
    bool subscripted = false;
    for (const auto& part : e.ref) subscripted = subscripted || !part.subscripts.empty();
    auto arity = [&](size_t want) {
      if (n == want) return true;
      diags_.report(DiagKind::bad_call, e.span,
                    {fmt::format("'{}' takes {} argument(s), {} given", name, want, n)});
      return false;
    };
    if (name == "der" && !subscripted) {
      if (!arity(1)) return nullptr;
      const ast::Expr& a = *e.args[0];
      if (a.kind != ast::ExprKind::Ref) {
        diags_.report(DiagKind::unsupported, e.span, {"der() of an expression in an objective"});
        diags_.help(
            "der(x) reads the column der(x) of the results; declare the derivative as a "
            "variable of the model");
        return nullptr;
      }
      auto inner = column_name(a.ref);
      if (!inner) return nullptr;
      const std::string column = "der(" + *inner + ")";
      if (auto it = symbol_of_.find(column); it != symbol_of_.end()) return cx_.symbol(it->second);
      diags_.report(DiagKind::objective_unknown_name, e.span, {column});
      diags_.help("the results have no column '" + column +
                  "'; declare a variable for it in the "
                  "model (Real v; v = " +
                  column + ";) and use that");
      return nullptr;
    }
    std::vector<sym::Expr> args;
    for (const auto& a : e.args) args.push_back(lower(*a));
    if (subscripted) {
      diags_.report(DiagKind::unknown_function, at, {name});
      return nullptr;
    }
    if (auto it = unary_functions().find(name); it != unary_functions().end()) {
      if (!arity(1) || !args[0]) return nullptr;
      return cx_.unary(it->second, args[0]);
    }
    if (name == "atan2" || name == "min" || name == "max") {
      if (n != 2 && name != "atan2") {
        diags_.report(DiagKind::bad_call, e.span,
                      {fmt::format("'{}' inside an objective's expression takes 2 arguments, {} "
                                   "given",
                                   name, n)});
        diags_.help("the reduction " + name +
                    "(...) can only be the outermost call of an objective");
        return nullptr;
      }
      if (!arity(2) || !args[0] || !args[1]) return nullptr;
      const sym::Op op = name == "atan2" ? sym::Op::Atan2
                         : name == "min" ? sym::Op::Min
                                         : sym::Op::Max;
      return cx_.binary(op, args[0], args[1]);
    }
    if (reduction_of(name)) {
      diags_.report(
          DiagKind::objective_form, at,
          {"the reduction '" + name + "' can only be the outermost call of an objective"});
      return nullptr;
    }
    diags_.report(DiagKind::unknown_function, at, {name});
    if (std::string s = suggestion(name, function_names()); !s.empty())
      diags_.help("did you mean '" + s + "'?");
    return nullptr;
  }

  sym::Expr binary(const ast::Expr& e) {
    sym::Expr a = lower(*e.args[0]);
    sym::Expr b = lower(*e.args[1]);
    if (!a || !b) return nullptr;
    std::string_view op = e.op;
    if (op.size() == 2 && op[0] == '.') op.remove_prefix(1);  // elementwise = scalar here
    if (op == "+") return cx_.add(a, b);
    if (op == "-") return cx_.sub(a, b);
    if (op == "*") return cx_.mul(a, b);
    if (op == "/") return cx_.div(a, b);
    if (op == "^") return cx_.pow(a, b);
    static const std::map<std::string, sym::Op, std::less<>> logic = {
        {"<", sym::Op::Lt},  {"<=", sym::Op::Le}, {">", sym::Op::Gt},    {">=", sym::Op::Ge},
        {"==", sym::Op::Eq}, {"<>", sym::Op::Ne}, {"and", sym::Op::And}, {"or", sym::Op::Or}};
    if (auto it = logic.find(op); it != logic.end()) return cx_.binary(it->second, a, b);
    diags_.report(DiagKind::unsupported, e.span, {"the operator '" + e.op + "' in an objective"});
    return nullptr;
  }

  sym::Context& cx_;
  DiagnosticEngine& diags_;
  const rt::CompiledModel& model_;
  const std::unordered_map<std::string, uint32_t>& symbol_of_;
};

// ------------------------------------------------------------------------------------------------
// The data of a fit

// Reads `file` (a path as written in the objective, at `file_span`) and its column `column`
// (named at `column_span`) into o.data_t and o.data_value. False after reporting a problem.
bool read_fit_data(SourceManager& sources, DiagnosticEngine& diags, const std::string& data_dir,
                   const std::string& file, Span file_span, const std::string& column,
                   Span column_span, rt::Objective& o) {
  std::filesystem::path path(file);
  if (path.is_relative() && !data_dir.empty()) path = std::filesystem::path(data_dir) / path;
  const std::string shown = path.string();
  std::string why;
  std::optional<std::string> data =
      rt::read_input_file(path.string(), rt::kDataFileLimit, "data file", why);
  if (!data) {
    diags.report(DiagKind::objective_data_unreadable, file_span, {shown, why});
    return false;
  }
  const uint32_t id = sources.add_file(shown, std::move(*data));
  const std::string& text = sources.text(id);
  o.data_file = shown;
  o.data_column = column;

  std::vector<std::string_view> lines;
  for (size_t start = 0; start <= text.size();) {
    size_t nl = text.find('\n', start);
    if (nl == std::string::npos) nl = text.size();
    std::string_view line(text.data() + start, nl - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back(line);
    start = nl + 1;
  }
  auto blank = [](std::string_view l) { return l.find_first_not_of(" \t") == std::string::npos; };
  if (lines.empty() || blank(lines[0])) {
    diags.report(DiagKind::objective_data_invalid, Span{id, 0, 0, 0, 0},
                 {"the data file has no header line (time, then the data columns)"});
    return false;
  }
  const std::vector<std::string> header = rt::split_csv_line(std::string(lines[0]));
  size_t k = header.size();
  for (size_t i = 1; i < header.size(); ++i)
    if (header[i] == column) k = i;
  if (k == header.size()) {
    diags.report(DiagKind::objective_data_column, column_span, {shown, column});
    std::vector<std::string> names(header.begin() + (header.empty() ? 0 : 1), header.end());
    if (std::string s = suggestion(column, names); !s.empty())
      diags.help("did you mean '" + s + "'?");
    diags.note(Span{id, 1, 1, 1, std::max<uint32_t>(1, columns(lines[0]))},
               "the columns of the data file (the first is time)");
    return false;
  }
  for (size_t l = 1; l < lines.size(); ++l) {
    if (blank(lines[l])) continue;
    const auto line_no = static_cast<uint32_t>(l + 1);
    const std::vector<std::string> fields = rt::split_csv_line(std::string(lines[l]));
    if (fields.size() <= k) {
      diags.report(DiagKind::objective_data_invalid, field_span(id, line_no, lines[l], 0),
                   {fmt::format("this row has {} field(s); column '{}' is field {}", fields.size(),
                                column, k + 1)});
      return false;
    }
    const std::optional<double> t = number(fields[0]);
    const std::optional<double> x = number(fields[k]);
    for (size_t f : {size_t{0}, k}) {
      if (number(fields[f])) continue;
      diags.report(DiagKind::objective_data_invalid, field_span(id, line_no, lines[l], f),
                   {fmt::format("'{}' is not a finite number", fields[f])});
      return false;
    }
    if (!o.data_t.empty() && !(*t > o.data_t.back())) {
      diags.report(DiagKind::objective_data_invalid, field_span(id, line_no, lines[l], 0),
                   {fmt::format("the times must increase: {} follows {}", *t, o.data_t.back())});
      return false;
    }
    o.data_t.push_back(*t);
    o.data_value.push_back(*x);
  }
  if (o.data_t.empty()) {
    diags.report(DiagKind::objective_data_invalid, Span{id, 0, 0, 0, 0},
                 {"the data file has no data rows"});
    return false;
  }
  return true;
}

// ------------------------------------------------------------------------------------------------
// One objective: reduction(expression) or fit(expression, "file" [, "column"])

class ObjectiveCompiler {
 public:
  ObjectiveCompiler(SourceManager& sources, DiagnosticEngine& diags, Lowering& lowering,
                    const std::string& data_dir)
      : sources_(sources), diags_(diags), lowering_(lowering), data_dir_(data_dir) {}

  // The pointwise expression, with o's reduction and data filled in; nullptr after errors.
  sym::Expr compile(const ast::Expr& e, rt::Objective& o) {
    if (e.kind != ast::ExprKind::Call) {
      diags_.report(DiagKind::objective_form, e.span,
                    {"an objective is a reduction of an expression, such as max(x) or "
                     "integral(x^2)"});
      diags_.help(kReductionList);
      return nullptr;
    }
    const std::string name = dotted(e.ref);
    const Span at = name_span(e.ref);
    const auto reduction = reduction_of(name);
    bool subscripted = false;
    for (const auto& part : e.ref) subscripted = subscripted || !part.subscripts.empty();
    if (!reduction || subscripted) {
      diags_.report(DiagKind::objective_unknown_reduction, at, {name});
      if (std::string s = reduction_meant(name); !s.empty())
        diags_.help("did you mean '" + s + "'?");
      else if (unary_functions().count(name) || name == "atan2" || name == "der")
        diags_.help("'" + name + "' is a function of the expression; reduce it, e.g. max(" + name +
                    "(...))");
      else
        diags_.help(kReductionList);
      return nullptr;
    }
    o.reduction = *reduction;
    const size_t n = e.args.size();
    if (o.reduction != rt::Reduction::Fit) {
      if (n == 1) return lowering_.lower(*e.args[0]);
      diags_.report(DiagKind::objective_form, e.span,
                    {fmt::format("the reduction '{}' takes one expression, {} given", name, n)});
      if (n == 2 && (name == "max" || name == "min"))
        diags_.help(
            fmt::format("{0}(a, b) of two expressions is pointwise: reduce it, as in "
                        "{0}({0}(a, b))",
                        name));
      return nullptr;
    }
    if (n != 2 && n != 3) {
      diags_.report(DiagKind::objective_form, e.span,
                    {fmt::format("fit takes an expression, a data file and optionally a column: "
                                 "fit(x, \"data.csv\") or fit(2*x, \"data.csv\", \"x2\"); {} "
                                 "argument(s) given",
                                 n)});
      return nullptr;
    }
    sym::Expr pointwise = lowering_.lower(*e.args[0]);
    bool ok = pointwise != nullptr;
    for (size_t i = 1; i < n; ++i) {
      if (e.args[i]->kind == ast::ExprKind::String) continue;
      diags_.report(DiagKind::objective_form, e.args[i]->span,
                    {i == 1 ? "the data file of fit must be a string, such as \"data.csv\""
                            : "the data column of fit must be a string, such as \"x\""});
      ok = false;
    }
    if (!ok) return nullptr;
    std::string column;
    Span column_span;
    if (n == 3) {
      column = e.args[2]->text;
      column_span = e.args[2]->span;
    } else if (e.args[0]->kind == ast::ExprKind::Ref) {
      auto c = lowering_.column_name(e.args[0]->ref);
      if (!c) return nullptr;
      column = *c;
      column_span = e.args[0]->span;
    } else {
      diags_.report(DiagKind::objective_form, e.args[0]->span,
                    {"fit of an expression that is not a variable's name needs the data column"});
      diags_.help("name it: fit(expression, \"" + e.args[1]->text + "\", \"column\")");
      return nullptr;
    }
    if (!read_fit_data(sources_, diags_, data_dir_, e.args[1]->text, e.args[1]->span, column,
                       column_span, o))
      return nullptr;
    return pointwise;
  }

 private:
  SourceManager& sources_;
  DiagnosticEngine& diags_;
  Lowering& lowering_;
  const std::string& data_dir_;
};

}  // namespace

ObjectivesResult compile_objectives(const rt::CompiledModel& model,
                                    const std::vector<std::string>& texts,
                                    const std::string& data_dir, std::ostream& diag_out) {
  ObjectivesResult result;
  SourceManager sources;
  DiagnosticEngine diags(sources);
  auto finish = [&] {
    diags.render(diag_out);
    for (DiagKind k : diags.kinds_seen()) result.diagnostic_kinds.push_back(diag_info(k).name);
    result.ok = !diags.has_errors();
    if (!result.ok) result.objectives.clear();
    return result;
  };

  auto code = std::make_shared<ObjectiveCode>();
  sym::Context& cx = code->cx;
  std::unordered_map<std::string, uint32_t> symbol_of;
  cx.new_symbol("time");
  for (const std::string& name : model.output_names) symbol_of.emplace(name, cx.new_symbol(name));
  Lowering lowering(cx, diags, model, symbol_of);
  ObjectiveCompiler compiler(sources, diags, lowering, data_dir);

  std::vector<codegen::KernelSpec> specs, gradient_specs;
  for (size_t i = 0; i < texts.size(); ++i) {
    const uint32_t id = sources.add_file(fmt::format("<objective {}>", i + 1), texts[i]);
    auto e = parse_expression(sources, id, diags);
    if (!e) continue;
    rt::Objective o;
    o.text = texts[i];
    o.n_outputs = static_cast<int32_t>(model.output_names.size());
    sym::Expr pointwise = compiler.compile(*e, o);
    if (!pointwise) continue;
    specs.push_back({fmt::format("objective_{}", i + 1), {pointwise}});
    // its gradient with respect to the outputs it reads (exact sensitivities of a study)
    codegen::KernelSpec gradient{fmt::format("objective_{}_gradient", i + 1), {}};
    for (uint32_t s : sym::free_symbols(pointwise)) {
      if (s == 0) continue;  // time does not depend on parameters
      o.gradient_columns.push_back(static_cast<int32_t>(s) - 1);
      gradient.outputs.push_back(sym::diff(cx, pointwise, s));
    }
    gradient_specs.push_back(std::move(gradient));
    result.objectives.push_back(std::move(o));
  }
  if (diags.has_errors() || result.objectives.empty()) return finish();

  // Small kernels: compiled every time (no object cache), on this thread.
  codegen::JitOptions jopts;
  jopts.threads = 1;
  std::string error;
  const size_t n_pointwise = specs.size();
  specs.insert(specs.end(), gradient_specs.begin(), gradient_specs.end());
  code->jit = codegen::JitModule::compile(cx, specs, jopts, &error);
  if (!code->jit) {
    diags.report(DiagKind::jit_failed, Span{}, {error});
    return finish();
  }
  for (size_t i = 0; i < n_pointwise; ++i) {
    rt::Objective& o = result.objectives[i];
    const codegen::KernelSpec& g = specs[n_pointwise + i];
    o.gradient =
        rt::Kernel{code->jit->lookup(g.name), static_cast<int32_t>(g.outputs.size()), g.name};
    o.pointwise = rt::Kernel{code->jit->lookup(specs[i].name), 1, specs[i].name};
    o.code_owner = code;
    if (!o.pointwise.fn)
      diags.report(DiagKind::jit_failed, Span{}, {"no code for " + specs[i].name});
  }
  return finish();
}

}  // namespace mbs
