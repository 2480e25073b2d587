// Infix printing with minimal parentheses: "m*der(x) - 2*x*lambda", "a/(b*c)", "x^(n + 1)".
//
// Linear in the DAG plus the output: every node is rendered once as a template (literal text and
// references to child nodes); the length of each node's full text is computed from the templates
// (saturating), and the output is written in one pass. A shared DAG can have an exponentially
// long infix form, so when the full text would exceed kMaxOutput characters, shared
// subexpressions longer than kMaxInlineShared are written as "..." in the places that use them,
// and the output is cut at kMaxOutput characters if it is still too long.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "compiler/symbolic/Expr.h"
#include "compiler/symbolic/ExprInternal.h"

namespace mbs::sym {

namespace {

constexpr size_t kMaxOutput = size_t{1} << 20;
constexpr size_t kMaxInlineShared = 80;

// Binding strength, loosest first. A child is parenthesised when it binds looser than its slot.
enum Prec : int {
  kIf = 0,    // if c then a else b
  kOr = 1,    // a or b
  kAnd = 2,   // a and b
  kNot = 3,   // not a
  kCmp = 4,   // a < b
  kSum = 5,   // a + b
  kNeg = 6,   // -a
  kProd = 7,  // a*b, a/b
  kPow = 8,   // a^b
  kAtom = 9,  // names, numbers, calls, parenthesised
};

// One piece of a node's text: literal text, or a reference to another node's text.
struct Piece {
  std::string text;        // literal (when node == nullptr)
  Expr node = nullptr;     // referenced node
  bool paren = false;      // wrap the reference in parentheses
  bool magnitude = false;  // write the referenced node without its leading '-'
};

struct Rendering {
  std::vector<Piece> pieces;
  int prec = kAtom;
  // Negative numbers and products with a negative coefficient start with the piece "-"; the
  // remaining pieces are the magnitude (so that sums print "a - 2*b", not "a + -2*b").
  bool negative = false;
  int magnitude_prec = kAtom;
  uint32_t parents = 0;  // number of references from other templates
  size_t length = 0;     // of the full text (saturating)
};

std::string number(double v) {
  return fmt::format("{}", v);
}

std::string_view function_name(Op op) {
  switch (op) {
    case Op::Sin:
      return "sin";
    case Op::Cos:
      return "cos";
    case Op::Tan:
      return "tan";
    case Op::Asin:
      return "asin";
    case Op::Acos:
      return "acos";
    case Op::Atan:
      return "atan";
    case Op::Atan2:
      return "atan2";
    case Op::Sinh:
      return "sinh";
    case Op::Cosh:
      return "cosh";
    case Op::Tanh:
      return "tanh";
    case Op::Exp:
      return "exp";
    case Op::Log:
      return "log";
    case Op::Log10:
      return "log10";
    case Op::Sqrt:
      return "sqrt";
    case Op::Abs:
      return "abs";
    case Op::Sign:
      return "sign";
    case Op::Floor:
      return "floor";
    case Op::Min:
      return "min";
    case Op::Max:
      return "max";
    case Op::Cancelled:
      return "cancelled";
    default:
      return {};
  }
}

std::string_view comparison(Op op) {
  switch (op) {
    case Op::Lt:
      return " < ";
    case Op::Le:
      return " <= ";
    case Op::Gt:
      return " > ";
    case Op::Ge:
      return " >= ";
    case Op::Eq:
      return " == ";
    case Op::Ne:
      return " <> ";
    default:
      return {};
  }
}

bool is_reciprocal_power(Expr f) {
  return f->op == Op::Pow && f->args()[1]->is_const() && f->args()[1]->value < 0;
}

size_t saturating_add(size_t a, size_t b) {
  return a > SIZE_MAX - b ? SIZE_MAX : a + b;
}

class Printer {
 public:
  explicit Printer(const Context& cx) : cx_(cx) {}

  std::string print(Expr root) {
    const Expr roots[1] = {root};
    std::vector<Expr> order;
    detail::post_order(
        roots, [&](Expr n) { return r_.insert(n, Rendering{}).second; },
        [&](Expr n) { order.push_back(n); });
    for (Expr n : order) render(n, r_[n]);
    for (Expr n : order) {
      for (const Piece& p : r_[n].pieces) {
        if (p.node != nullptr) r_[p.node].parents++;
      }
    }
    compute_lengths(order);
    if (r_[root].length > kMaxOutput) {
      elide_ = true;
      compute_lengths(order);
    }
    std::string out;
    out.reserve(std::min(r_[root].length, kMaxOutput) + 3);
    write(root, out);
    return out;
  }

 private:
  // ---- templates ----

  Piece lit(std::string_view s) { return Piece{std::string(s)}; }

  // A reference to c in a slot that needs at least precedence `min`.
  Piece ref(Expr c, int min) {
    Piece p;
    p.node = c;
    p.paren = r_[c].prec < min;
    return p;
  }

  // The denominator entry for a factor b^(-k): "b" or "b^k".
  void denominator_factor(std::vector<Piece>& out, Expr f, int min) {
    double k = -f->args()[1]->value;
    if (k == 1.0) {
      out.push_back(ref(f->args()[0], min));
    } else {
      out.push_back(ref(f->args()[0], kAtom));
      out.push_back(lit("^"));
      out.push_back(lit(number(k)));
    }
  }

  // coef * factors, with reciprocal powers moved below a '/'.
  void product(Rendering& r, double coef, std::span<const Expr> factors) {
    std::vector<Expr> up;
    std::vector<Expr> down;
    for (Expr f : factors) (is_reciprocal_power(f) ? down : up).push_back(f);
    // Stored order is by node id (construction history); print by base instead, which keeps
    // x*y^2 and x/y in the order of the symbols whatever was built first.
    auto base_id = [](Expr f) { return f->op == Op::Pow ? f->args()[0]->id : f->id; };
    auto by_base = [&](Expr a, Expr b) { return base_id(a) < base_id(b); };
    std::sort(up.begin(), up.end(), by_base);
    std::sort(down.begin(), down.end(), by_base);
    std::vector<Piece> body;
    double mag = std::fabs(coef);
    if (mag != 1.0 || up.empty()) body.push_back(lit(number(mag)));
    for (Expr f : up) {
      if (!body.empty()) body.push_back(lit("*"));
      body.push_back(ref(f, kProd + 1));
    }
    if (down.size() == 1) {
      body.push_back(lit("/"));
      denominator_factor(body, down[0], kAtom);
    } else if (!down.empty()) {
      body.push_back(lit("/("));
      for (size_t i = 0; i < down.size(); ++i) {
        if (i > 0) body.push_back(lit("*"));
        denominator_factor(body, down[i], kProd + 1);
      }
      body.push_back(lit(")"));
    }
    // A lone factor keeps its own precedence (it was parenthesised if it binds looser).
    r.prec = kProd;
    if (up.size() == 1 && down.empty() && mag == 1.0) r.prec = std::max(r_[up[0]].prec, int{kPow});
    if (std::signbit(coef)) {
      r.negative = true;
      r.magnitude_prec = r.prec;
      r.prec = kNeg;
      r.pieces.push_back(lit("-"));  // the magnitude binds at least as tightly as a product
    }
    for (Piece& p : body) r.pieces.push_back(std::move(p));
  }

  void render(Expr n, Rendering& r) {
    auto& out = r.pieces;
    switch (n->op) {
      case Op::Const:
        if (std::signbit(n->value) && !std::isnan(n->value)) {
          r.negative = true;
          r.prec = kNeg;
          out.push_back(lit("-"));
          out.push_back(lit(number(-n->value)));
        } else {
          out.push_back(lit(number(n->value)));
        }
        return;
      case Op::Symbol:
        out.push_back(lit(cx_.symbol_name(n->symbol)));
        return;
      case Op::Add: {
        // Non-constant terms in stored order, the constant (stored first) last: "x + y + 1".
        std::vector<Expr> terms(n->children().begin(), n->children().end());
        if (terms.front()->is_const()) std::rotate(terms.begin(), terms.begin() + 1, terms.end());
        for (size_t i = 0; i < terms.size(); ++i) {
          const Rendering& t = r_[terms[i]];
          if (i == 0) {
            out.push_back(ref(terms[i], kSum));
          } else if (t.negative) {
            out.push_back(lit(" - "));
            Piece p = ref(terms[i], kSum + 1);
            p.magnitude = true;
            p.paren = t.magnitude_prec <= kSum;
            out.push_back(std::move(p));
          } else {
            out.push_back(lit(" + "));
            out.push_back(ref(terms[i], kSum + 1));
          }
        }
        r.prec = kSum;
        return;
      }
      case Op::Mul: {
        std::span<const Expr> f = n->children();
        double coef = 1.0;
        if (f.front()->is_const()) {
          coef = f.front()->value;
          f = f.subspan(1);
        }
        product(r, coef, f);
        return;
      }
      case Op::Pow:
        if (is_reciprocal_power(n)) {
          product(r, 1.0, {&n, 1});
          return;
        }
        out.push_back(ref(n->args()[0], kAtom));
        out.push_back(lit("^"));
        out.push_back(ref(n->args()[1], kAtom));
        r.prec = kPow;
        return;
      case Op::Select:
        out.push_back(lit("if "));
        out.push_back(ref(n->args()[0], kIf + 1));
        out.push_back(lit(" then "));
        out.push_back(ref(n->args()[1], kIf + 1));
        out.push_back(lit(" else "));
        out.push_back(ref(n->args()[2], kIf));
        r.prec = kIf;
        return;
      case Op::Not:
        out.push_back(lit("not "));
        out.push_back(ref(n->args()[0], kCmp));
        r.prec = kNot;
        return;
      case Op::Lt:
      case Op::Le:
      case Op::Gt:
      case Op::Ge:
      case Op::Eq:
      case Op::Ne:
        out.push_back(ref(n->args()[0], kSum));
        out.push_back(lit(comparison(n->op)));
        out.push_back(ref(n->args()[1], kSum));
        r.prec = kCmp;
        return;
      case Op::And:
        out.push_back(ref(n->args()[0], kAnd));
        out.push_back(lit(" and "));
        out.push_back(ref(n->args()[1], kNot));
        r.prec = kAnd;
        return;
      case Op::Or:
        out.push_back(ref(n->args()[0], kOr));
        out.push_back(lit(" or "));
        out.push_back(ref(n->args()[1], kAnd));
        r.prec = kOr;
        return;
      default:
        out.push_back(lit(std::string(function_name(n->op)) + "("));
        for (uint32_t i = 0; i < n->nargs; ++i) {
          if (i > 0) out.push_back(lit(", "));
          out.push_back(ref(n->args()[i], kIf));
        }
        out.push_back(lit(")"));
        return;
    }
  }

  // ---- lengths and output ----

  bool elided(const Piece& p) {
    if (!elide_) return false;
    const Rendering& c = r_[p.node];
    return c.parents > 1 && c.length > kMaxInlineShared;
  }

  size_t piece_length(const Piece& p) {
    if (p.node == nullptr) return p.text.size();
    if (elided(p)) return 3;
    size_t len = r_[p.node].length;
    if (p.magnitude) len -= 1;  // the leading '-'
    return saturating_add(len, p.paren ? 2 : 0);
  }

  void compute_lengths(const std::vector<Expr>& order) {
    for (Expr n : order) {
      size_t len = 0;
      for (const Piece& p : r_[n].pieces) len = saturating_add(len, piece_length(p));
      r_[n].length = len;
    }
  }

  // Writes the text of `root` with an explicit stack (no recursion), stopping at kMaxOutput.
  void write(Expr root, std::string& out) {
    struct Frame {
      const Rendering* r;
      size_t next;
      bool close_paren;
    };
    std::vector<Frame> stack{{&r_[root], 0, false}};
    while (!stack.empty()) {
      if (out.size() > kMaxOutput) {
        out += "...";
        return;
      }
      Frame& top = stack.back();
      if (top.next == top.r->pieces.size()) {
        if (top.close_paren) out += ')';
        stack.pop_back();
        continue;
      }
      const Piece& p = top.r->pieces[top.next++];
      if (p.node == nullptr) {
        out += p.text;
      } else if (elided(p)) {
        out += "...";
      } else {
        if (p.paren) out += '(';
        const Rendering* child = &r_[p.node];
        stack.push_back({child, p.magnitude ? size_t{1} : size_t{0}, p.paren});
      }
    }
  }

  const Context& cx_;
  detail::NodeMap<Rendering> r_;
  bool elide_ = false;
};

}  // namespace

std::string to_string(const Context& cx, Expr e) {
  return Printer(cx).print(e);
}

}  // namespace mbs::sym
