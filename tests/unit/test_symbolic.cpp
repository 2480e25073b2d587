// Tests of the hash-consed expression DAG: identity, every simplification rule (and its
// soundness against plain floating-point arithmetic), derivatives of every op against central
// finite differences, substitution, sparsity, linear-time walks and printing.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <numbers>
#include <random>
#include <string>
#include <vector>

#include "compiler/symbolic/Expr.h"

namespace mbs::sym {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// Central finite difference of e w.r.t. symbol s at point p, step ~1e-6 relative.
double finite_difference(Expr e, uint32_t s, std::vector<double> p) {
  double x = p[s];
  double h = 1e-6 * std::max(1.0, std::fabs(x));
  p[s] = x + h;
  double up = evaluate(e, p);
  p[s] = x - h;
  double down = evaluate(e, p);
  return (up - down) / (2 * h);
}

// |a - b| small relative to max(1, |b|).
::testing::AssertionResult close(double a, double b, double tol) {
  double err = std::fabs(a - b);
  if (err <= tol * std::max(1.0, std::fabs(b))) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << a << " vs " << b << " (error " << err << ")";
}

class Sym : public ::testing::Test {
 protected:
  Context cx;
  uint32_t ix = cx.new_symbol("x");
  uint32_t iy = cx.new_symbol("y");
  uint32_t iz = cx.new_symbol("z");
  Expr x = cx.symbol(ix);
  Expr y = cx.symbol(iy);
  Expr z = cx.symbol(iz);
  Expr c(double v) { return cx.num(v); }
  Expr f(Op op, Expr a) { return cx.unary(op, a); }
  Expr f(Op op, Expr a, Expr b) { return cx.binary(op, a, b); }
  std::string str(Expr e) { return to_string(cx, e); }
};

// ---- hash-consing ------------------------------------------------------------------------------

TEST_F(Sym, IdenticalStructureIsIdenticalPointer) {
  Expr a = cx.add(cx.mul(x, f(Op::Sin, y)), c(3));
  size_t count = cx.node_count();
  Expr b = cx.add(c(3), cx.mul(f(Op::Sin, y), x));
  EXPECT_EQ(a, b);
  EXPECT_EQ(cx.node_count(), count);  // nothing new was created
  EXPECT_EQ(cx.add(x, y), cx.add(y, x));
  EXPECT_EQ(cx.mul(x, y), cx.mul(y, x));
  EXPECT_EQ(cx.add(cx.add(x, y), z), cx.add(x, cx.add(y, z)));
  EXPECT_EQ(cx.mul(cx.mul(x, y), z), cx.mul(z, cx.mul(y, x)));
  EXPECT_EQ(f(Op::Eq, x, y), f(Op::Eq, y, x));
  EXPECT_NE(f(Op::Lt, x, y), f(Op::Lt, y, x));
  EXPECT_NE(f(Op::Atan2, x, y), f(Op::Atan2, y, x));
  EXPECT_NE(c(0.0), c(-0.0));  // distinct bit patterns
  EXPECT_EQ(c(std::nan("")), c(std::nan("")));
  EXPECT_NE(cx.symbol(cx.new_symbol("x")), x);  // same display name, different symbol
}

TEST_F(Sym, ChildrenHaveSmallerIdsAndCanonicalOrder) {
  Expr e = cx.add({c(2), cx.mul(c(3), cx.mul(z, y)), x});
  ASSERT_EQ(e->op, Op::Add);
  EXPECT_TRUE(e->arg(0)->is_const(2.0));  // constant first
  for (Expr ch : e->children()) EXPECT_LT(ch->id, e->id);
  Expr m = cx.mul({z, c(3), y, x});
  ASSERT_EQ(m->op, Op::Mul);
  EXPECT_TRUE(m->arg(0)->is_const(3.0));  // coefficient first
  for (size_t i = 2; i < m->nargs; ++i) EXPECT_LT(m->arg(i - 1)->id, m->arg(i)->id);
}

// ---- simplification rules ---------------------------------------------------------------------

TEST_F(Sym, ConstantFoldingOfEveryOp) {
  const double a = 0.3, b = 0.7;
  EXPECT_TRUE(cx.add(c(a), c(b))->is_const(a + b));
  EXPECT_TRUE(cx.sub(c(a), c(b))->is_const(a - b));
  EXPECT_TRUE(cx.mul(c(a), c(b))->is_const(a * b));
  EXPECT_TRUE(cx.div(c(a), c(b))->is_const(a / b));
  EXPECT_TRUE(cx.pow(c(a), c(b))->is_const(std::pow(a, b)));
  EXPECT_TRUE(cx.neg(c(a))->is_const(-a));
  struct U {
    Op op;
    double (*fn)(double);
  };
  const U unary[] = {{Op::Sin, [](double v) { return std::sin(v); }},
                     {Op::Cos, [](double v) { return std::cos(v); }},
                     {Op::Tan, [](double v) { return std::tan(v); }},
                     {Op::Asin, [](double v) { return std::asin(v); }},
                     {Op::Acos, [](double v) { return std::acos(v); }},
                     {Op::Atan, [](double v) { return std::atan(v); }},
                     {Op::Sinh, [](double v) { return std::sinh(v); }},
                     {Op::Cosh, [](double v) { return std::cosh(v); }},
                     {Op::Tanh, [](double v) { return std::tanh(v); }},
                     {Op::Exp, [](double v) { return std::exp(v); }},
                     {Op::Log, [](double v) { return std::log(v); }},
                     {Op::Log10, [](double v) { return std::log10(v); }},
                     {Op::Sqrt, [](double v) { return std::sqrt(v); }},
                     {Op::Abs, [](double v) { return std::fabs(v); }}};
  for (const U& u : unary) {
    for (double v : {0.3, -0.3}) {
      Expr e = f(u.op, c(v));
      ASSERT_TRUE(e->is_const()) << op_name(u.op);
      if (std::isnan(u.fn(v))) {
        EXPECT_TRUE(std::isnan(e->value)) << op_name(u.op);
      } else {
        EXPECT_EQ(e->value, u.fn(v)) << op_name(u.op);
      }
    }
  }
  EXPECT_TRUE(f(Op::Sign, c(-2))->is_const(-1));
  EXPECT_TRUE(f(Op::Sign, c(2))->is_const(1));
  EXPECT_TRUE(f(Op::Sign, c(0))->is_const(0));
  EXPECT_TRUE(f(Op::Atan2, c(a), c(-b))->is_const(std::atan2(a, -b)));
  EXPECT_TRUE(f(Op::Min, c(a), c(b))->is_const(a));
  EXPECT_TRUE(f(Op::Max, c(a), c(b))->is_const(b));
  EXPECT_TRUE(f(Op::Lt, c(a), c(b))->is_const(1));
  EXPECT_TRUE(f(Op::Le, c(b), c(b))->is_const(1));
  EXPECT_TRUE(f(Op::Gt, c(a), c(b))->is_const(0));
  EXPECT_TRUE(f(Op::Ge, c(a), c(b))->is_const(0));
  EXPECT_TRUE(f(Op::Eq, c(a), c(a))->is_const(1));
  EXPECT_TRUE(f(Op::Ne, c(a), c(a))->is_const(0));
  EXPECT_TRUE(f(Op::And, c(1), c(0))->is_const(0));
  EXPECT_TRUE(f(Op::Or, c(1), c(0))->is_const(1));
  EXPECT_TRUE(f(Op::Not, c(0))->is_const(1));
  EXPECT_TRUE(f(Op::Not, c(3))->is_const(0));
  EXPECT_EQ(cx.select(c(1), x, y), x);
  EXPECT_EQ(cx.select(c(0), x, y), y);
  EXPECT_EQ(cx.select(c(std::nan("")), x, y), x);  // NaN != 0 is true
  // Folding through a whole expression once the symbol is replaced by a constant.
  Expr e = cx.add(f(Op::Sin, cx.mul(c(2), x)), cx.pow(x, c(3)));
  Expr folded = substitute(cx, e, {{ix, c(0.25)}});
  ASSERT_TRUE(folded->is_const());
  EXPECT_NEAR(folded->value, std::sin(0.5) + std::pow(0.25, 3), 1e-15);
}

TEST_F(Sym, FlatteningAndNeutralElements) {
  Expr s = cx.add(cx.add(x, y), cx.add(z, c(1)));
  ASSERT_EQ(s->op, Op::Add);
  EXPECT_EQ(s->nargs, 4u);
  Expr p = cx.mul(cx.mul(x, y), cx.mul(z, c(2)));
  ASSERT_EQ(p->op, Op::Mul);
  EXPECT_EQ(p->nargs, 4u);
  EXPECT_EQ(cx.add(x, c(0)), x);
  EXPECT_EQ(cx.add(c(0), x), x);
  EXPECT_EQ(cx.mul(x, c(1)), x);
  EXPECT_EQ(cx.mul(c(1), x), x);
  EXPECT_TRUE(cx.mul(x, c(0))->is_const(0));
  EXPECT_TRUE(cx.mul({x, y, c(0), z})->is_const(0));
  EXPECT_EQ(cx.sub(x, c(0)), x);
  EXPECT_EQ(cx.div(x, c(1)), x);
  EXPECT_EQ(cx.add(cx.add(x, c(1)), c(-1)), x);
  EXPECT_EQ(cx.mul(cx.mul(x, c(2)), c(0.5)), x);
}

TEST_F(Sym, LikeTermsInSums) {
  EXPECT_EQ(cx.add(x, x), cx.mul(c(2), x));
  EXPECT_EQ(cx.sub(cx.mul(c(3), x), x), cx.mul(c(2), x));
  EXPECT_TRUE(cx.sub(x, x)->is_const(0));
  Expr xy = cx.mul(x, y);
  EXPECT_EQ(cx.add(cx.mul(c(2), xy), cx.mul(y, cx.mul(c(5), x))), cx.mul(c(7), xy));
  Expr a = cx.add({x, f(Op::Sin, y), c(3)});
  EXPECT_TRUE(cx.sub(a, a)->is_const(0));
  EXPECT_TRUE(cx.add(a, cx.neg(a))->is_const(0));  // -(x + sin y + 3) is a sum, cancels termwise
  EXPECT_EQ(cx.sub(cx.mul(c(2), cx.add(x, y)), cx.mul(c(2), x)), cx.mul(c(2), y));
  EXPECT_EQ(cx.sub(cx.add(x, y), x), y);
}

TEST_F(Sym, EqualBasesInProducts) {
  // a cancelled factor stays as Cancelled(x): 1 where x is finite and non-zero, NaN elsewhere
  const Expr cancelled_x = f(Op::Cancelled, x);
  EXPECT_EQ(cx.mul(x, x), cx.pow(x, c(2)));
  EXPECT_EQ(cx.div(cx.pow(x, c(2)), x), cx.mul(x, cancelled_x));
  EXPECT_EQ(cx.div(x, x), cancelled_x);
  EXPECT_EQ(cx.div(cx.mul(c(2), x), cx.mul(x, c(2))), cancelled_x);
  EXPECT_EQ(cx.mul(cx.pow(x, y), cx.pow(x, z)), cx.pow(x, cx.add(y, z)));
  EXPECT_EQ(cx.mul({x, y, x, y, x}), cx.mul(cx.pow(x, c(3)), cx.pow(y, c(2))));
  EXPECT_EQ(cx.mul(cx.pow(x, c(0.5)), cx.pow(x, c(0.5))), x);
  EXPECT_EQ(cx.mul(cx.pow(x, c(-1)), x), cancelled_x);
  EXPECT_EQ(cx.div(cx.mul(x, y), y), cx.mul(x, f(Op::Cancelled, y)));
  // Cancelled(x) is idempotent in products, powers and nesting
  EXPECT_EQ(cx.mul(cx.div(x, x), cx.div(cx.pow(x, c(3)), cx.pow(x, c(3)))), cancelled_x);
  EXPECT_EQ(cx.pow(cancelled_x, c(3)), cancelled_x);
  EXPECT_EQ(f(Op::Cancelled, cancelled_x), cancelled_x);
  EXPECT_EQ(diff(cx, cancelled_x, ix), cx.zero());
}

// Issue 36: a division by zero, an infinity or a NaN is never simplified into a number. Each
// form below is evaluated where plain double arithmetic gives NaN or inf, and where it is finite.
TEST_F(Sym, CancellationKeepsTheValueOfWhatItCancels) {
  const double inf = HUGE_VAL, nan = std::nan("");
  // constant folding is IEEE arithmetic
  EXPECT_TRUE(std::isnan(cx.div(c(0), c(0))->value));
  EXPECT_TRUE(std::isnan(cx.mul(c(0), cx.div(c(1), c(0)))->value));
  EXPECT_TRUE(std::isnan(cx.mul({c(0), c(inf), x})->value));
  EXPECT_TRUE(std::isnan(cx.div(cx.sub(x, x), cx.sub(x, x))->value));
  EXPECT_TRUE(std::isnan(cx.div(c(inf), c(inf))->value));
  struct Form {
    const char* what;
    Expr e;
    double (*plain)(double x, double y);
  };
  const Form forms[] = {
      {"x/x", cx.div(x, x), [](double a, double) { return a / a; }},
      {"x*(1/x)", cx.mul(x, cx.div(c(1), x)), [](double a, double) { return a * (1 / a); }},
      {"x^2/x", cx.div(cx.pow(x, c(2)), x), [](double a, double) { return a * a / a; }},
      {"x*y/y", cx.div(cx.mul(x, y), y), [](double a, double b) { return a * b / b; }},
      {"exp(x)/exp(x)", cx.div(f(Op::Exp, x), f(Op::Exp, x)),
       [](double a, double) { return std::exp(a) / std::exp(a); }},
      {"(x*y)^2/(y*x^2)", cx.div(cx.pow(cx.mul(x, y), c(2)), cx.mul(y, cx.pow(x, c(2)))),
       [](double a, double b) { return (a * b) * (a * b) / (b * (a * a)); }},
  };
  for (const Form& form : forms) {
    for (double a : {0.0, -0.0, inf, -inf, nan, 2.5, -1e-3, 1e10}) {
      for (double b : {0.0, nan, 3.0, -0.5}) {
        const double want = form.plain(a, b);
        const double got = evaluate(form.e, std::vector<double>{a, b, 0.0});
        if (std::isfinite(want)) {
          EXPECT_TRUE(close(got, want, 1e-12)) << form.what << " at x = " << a << ", y = " << b;
        } else {
          EXPECT_FALSE(std::isfinite(got))
              << form.what << " at x = " << a << ", y = " << b << " is " << got << ", not " << want;
        }
      }
    }
  }
}

TEST_F(Sym, PowerRules) {
  EXPECT_TRUE(cx.pow(x, c(0))->is_const(1));
  EXPECT_EQ(cx.pow(x, c(1)), x);
  EXPECT_TRUE(cx.pow(c(1), x)->is_const(1));
  EXPECT_EQ(cx.pow(cx.pow(x, y), c(2)), cx.pow(x, cx.mul(c(2), y)));  // integer outer: merged
  EXPECT_EQ(cx.pow(cx.pow(x, c(3)), c(-2)), cx.pow(x, c(-6)));
  Expr kept = cx.pow(cx.pow(x, c(2)), c(0.5));  // (x^2)^0.5 = |x|, not x: must stay
  ASSERT_EQ(kept->op, Op::Pow);
  EXPECT_EQ(kept->arg(0), cx.pow(x, c(2)));
  EXPECT_NE(cx.pow(cx.pow(x, c(0.5)), y), cx.pow(x, cx.mul(c(0.5), y)));
  EXPECT_EQ(cx.pow(cx.mul(c(2), x), c(2)), cx.mul(c(4), cx.pow(x, c(2))));
  EXPECT_EQ(cx.pow(cx.mul(x, y), c(-1)), cx.mul(cx.pow(x, c(-1)), cx.pow(y, c(-1))));
}

TEST_F(Sym, NegationAndDivision) {
  EXPECT_EQ(cx.neg(cx.neg(x)), x);
  EXPECT_EQ(cx.neg(cx.neg(cx.add(x, f(Op::Cos, y)))), cx.add(x, f(Op::Cos, y)));
  EXPECT_TRUE(cx.sub(f(Op::Exp, x), f(Op::Exp, x))->is_const(0));
  EXPECT_EQ(cx.div(f(Op::Exp, x), f(Op::Exp, x)), f(Op::Cancelled, f(Op::Exp, x)));
  EXPECT_EQ(cx.neg(cx.mul(c(3), x)), cx.mul(c(-3), x));
  EXPECT_EQ(cx.div(x, c(4)), cx.mul(c(0.25), x));
}

TEST_F(Sym, FunctionAndLogicRules) {
  EXPECT_EQ(f(Op::Abs, f(Op::Abs, x)), f(Op::Abs, x));
  EXPECT_EQ(f(Op::Min, x, x), x);
  EXPECT_EQ(f(Op::Max, x, x), x);
  EXPECT_EQ(cx.select(f(Op::Lt, x, y), z, z), z);
  EXPECT_TRUE(f(Op::Lt, x, x)->is_const(0));
  EXPECT_TRUE(f(Op::And, c(0), x)->is_const(0));
  EXPECT_TRUE(f(Op::Or, x, c(2))->is_const(1));
  EXPECT_EQ(f(Op::And, c(5), x), f(Op::Ne, x, c(0)));
  EXPECT_EQ(cx.make(Op::Sin, {&x, 1}), f(Op::Sin, x));
  const Expr xy[2] = {x, y};
  EXPECT_EQ(cx.make(Op::Pow, xy), cx.pow(x, y));
  EXPECT_THROW(cx.make(Op::Sin, xy), std::logic_error);
  EXPECT_THROW(cx.unary(Op::Add, x), std::logic_error);
  EXPECT_THROW(cx.make(Op::Const, {}), std::logic_error);
}

// Soundness: every construction is checked against plain double arithmetic on the values the
// operands have at a few random points. The simplifier may reassociate (rounding), and may turn a
// NaN into a number only by the two rules docs/diagnostics.md names (x*0 = 0 and x - x = 0 for a
// symbolic x), but never change a finite value.
TEST_F(Sym, SimplificationIsSoundOnRandomConstructions) {
  std::mt19937_64 rng(12345);
  constexpr int kPoints = 4;
  std::uniform_real_distribution<double> unit(-2.0, 2.0);
  std::vector<std::vector<double>> points(kPoints);
  for (auto& p : points) p = {unit(rng), unit(rng), unit(rng)};
  struct Item {
    Expr e;
    std::vector<double> v;
    int depth;
  };
  std::vector<Item> pool;
  auto leaf = [&](Expr e) {
    std::vector<double> v(kPoints);
    for (int k = 0; k < kPoints; ++k) v[k] = evaluate(e, points[k]);
    pool.push_back({e, v, 0});
  };
  for (Expr e : {x, y, z, c(0), c(1), c(-1), c(2), c(0.5), c(3)}) leaf(e);

  auto pick = [&]() -> const Item& {
    // Favour recent items (deeper expressions) and sometimes reuse one (x + x, x/x, ...).
    std::uniform_int_distribution<size_t> any(0, pool.size() - 1);
    size_t i = any(rng);
    if (rng() % 2 && pool.size() > 20) i = pool.size() - 1 - rng() % 20;
    return pool[i];
  };
  const Op unary_ops[] = {Op::Sin,  Op::Cos,  Op::Exp,  Op::Abs, Op::Sign,
                          Op::Atan, Op::Tanh, Op::Sqrt, Op::Log, Op::Not};
  const Op binary_ops[] = {Op::Min, Op::Max, Op::Lt, Op::Le,   Op::Eq,
                           Op::Ne,  Op::And, Op::Or, Op::Atan2};
  int checked = 0;
  for (int step = 0; step < 6000; ++step) {
    const Item a = pick();
    const Item b = rng() % 4 == 0 ? a : pick();
    int kind = static_cast<int>(rng() % 12);
    Expr e;
    std::vector<double> v(kPoints);
    double n = static_cast<double>(static_cast<int>(rng() % 7) - 3);  // -3..3
    for (int k = 0; k < kPoints; ++k) {
      double p = a.v[k], q = b.v[k];
      switch (kind) {
        case 0:
          v[k] = p + q;
          break;
        case 1:
          v[k] = p - q;
          break;
        case 2:
          v[k] = p * q;
          break;
        case 3:
          v[k] = p / q;
          break;
        case 4:
          v[k] = -p;
          break;
        case 5:
          v[k] = std::pow(p, n);
          break;
        case 6:
          v[k] = std::pow(p, 0.5);
          break;
        case 7:
          v[k] = std::pow(std::fabs(p) + 0.5, q);
          break;
        case 8:
          v[k] = 2.5 * p;
          break;
        default:
          break;
      }
    }
    switch (kind) {
      case 0:
        e = cx.add(a.e, b.e);
        break;
      case 1:
        e = cx.sub(a.e, b.e);
        break;
      case 2:
        e = cx.mul(a.e, b.e);
        break;
      case 3:
        e = cx.div(a.e, b.e);
        break;
      case 4:
        e = cx.neg(a.e);
        break;
      case 5:
        e = cx.pow(a.e, c(n));
        break;
      case 6:
        e = cx.pow(a.e, c(0.5));
        break;
      case 7:
        e = cx.pow(cx.add(f(Op::Abs, a.e), c(0.5)), b.e);
        break;
      case 8:
        e = cx.mul(c(2.5), a.e);
        break;
      case 9: {
        Op op = unary_ops[rng() % std::size(unary_ops)];
        e = f(op, a.e);
        for (int k = 0; k < kPoints; ++k) v[k] = evaluate(f(op, c(a.v[k])), {});
        break;
      }
      case 10: {
        Op op = binary_ops[rng() % std::size(binary_ops)];
        // atan2 jumps between -pi and pi at a signed zero, and x*0 = 0 drops the sign of zero.
        if (op == Op::Atan2 && std::count(a.v.begin(), a.v.end(), 0.0) > 0) op = Op::Min;
        e = f(op, a.e, b.e);
        for (int k = 0; k < kPoints; ++k) v[k] = evaluate(f(op, c(a.v[k]), c(b.v[k])), {});
        break;
      }
      default: {
        const Item cnd = pick();
        e = cx.select(cnd.e, a.e, b.e);
        for (int k = 0; k < kPoints; ++k) v[k] = cnd.v[k] != 0 ? a.v[k] : b.v[k];
        break;
      }
    }
    bool usable = true;
    for (int k = 0; k < kPoints; ++k) {
      if (!std::isfinite(v[k]) || std::fabs(v[k]) > 1e6) usable = false;
    }
    if (!usable) continue;
    for (int k = 0; k < kPoints; ++k) {
      double got = evaluate(e, points[k]);
      ASSERT_TRUE(close(got, v[k], 1e-9))
          << "step " << step << " kind " << kind << ": " << str(e) << " at point " << k;
      ++checked;
    }
    if (std::max(a.depth, b.depth) < 6) pool.push_back({e, v, std::max(a.depth, b.depth) + 1});
  }
  EXPECT_GT(checked, 10000);
}

// ---- derivatives ------------------------------------------------------------------------------

struct DiffCase {
  std::string name;
  std::function<Expr(Context&, Expr, Expr)> build;  // f(x, y)
  double lo, hi;                                    // sampling domain of x and y
};

TEST_F(Sym, EveryOpDerivativeMatchesFiniteDifferences) {
  auto U = [](Op op) {
    return [op](Context& k, Expr a, Expr b) { return k.unary(op, k.add(a, k.mul(k.num(0.1), b))); };
  };
  auto B = [](Op op) { return [op](Context& k, Expr a, Expr b) { return k.binary(op, a, b); }; };
  const std::vector<DiffCase> cases = {
      {"add",
       [](Context& k, Expr a, Expr b) {
         return k.add({a, b, k.num(2)});
       },
       -2, 2},
      {"sub", [](Context& k, Expr a, Expr b) { return k.sub(a, k.mul(k.num(3), b)); }, -2, 2},
      {"mul",
       [](Context& k, Expr a, Expr b) {
         return k.mul({k.num(2), a, b, a});
       },
       -2, 2},
      {"div", [](Context& k, Expr a, Expr b) { return k.div(a, k.add(b, k.num(3))); }, -2, 2},
      {"pow_int", [](Context& k, Expr a, Expr b) { return k.pow(k.add(a, b), k.num(3)); }, -2, 2},
      {"pow_neg", [](Context& k, Expr a, Expr b) { return k.pow(a, k.num(-2)); }, 0.5, 2},
      {"pow_half", [](Context& k, Expr a, Expr b) { return k.pow(a, k.num(0.5)); }, 0.5, 2},
      {"pow_real", [](Context& k, Expr a, Expr b) { return k.pow(a, k.num(2.5)); }, 0.5, 2},
      {"pow_general", B(Op::Pow), 0.5, 2},
      {"pow_const_base", [](Context& k, Expr a, Expr b) { return k.pow(k.num(2), a); }, -2, 2},
      {"sin", U(Op::Sin), -2, 2},
      {"cos", U(Op::Cos), -2, 2},
      {"tan", U(Op::Tan), -1, 1},
      {"asin", U(Op::Asin), -0.8, 0.8},
      {"acos", U(Op::Acos), -0.8, 0.8},
      {"atan", U(Op::Atan), -2, 2},
      {"atan2", B(Op::Atan2), 0.3, 2},
      {"atan2_neg", [](Context& k, Expr a, Expr b) { return k.binary(Op::Atan2, a, k.neg(b)); },
       0.3, 2},
      {"sinh", U(Op::Sinh), -2, 2},
      {"cosh", U(Op::Cosh), -2, 2},
      {"tanh", U(Op::Tanh), -2, 2},
      {"exp", U(Op::Exp), -2, 2},
      {"log", U(Op::Log), 0.3, 2},
      {"log10", U(Op::Log10), 0.3, 2},
      {"sqrt", U(Op::Sqrt), 0.3, 2},
      {"abs_pos", U(Op::Abs), 0.3, 2},
      {"abs_neg", U(Op::Abs), -2, -0.3},
      {"sign", [](Context& k, Expr a, Expr b) { return k.mul(k.unary(Op::Sign, a), b); }, 0.3, 2},
      {"min", [](Context& k, Expr a, Expr b) { return k.binary(Op::Min, a, k.mul(k.num(2), b)); },
       0.3, 2},
      {"max", [](Context& k, Expr a, Expr b) { return k.binary(Op::Max, a, k.mul(k.num(2), b)); },
       0.3, 2},
      {"select",
       [](Context& k, Expr a, Expr b) {
         return k.select(k.binary(Op::Gt, a, b), k.mul(a, b), k.unary(Op::Sin, a));
       },
       -2, 2},
      {"compare_and_logic",
       [](Context& k, Expr a, Expr b) {
         Expr cmp = k.binary(Op::Or, k.binary(Op::Le, a, b),
                             k.unary(Op::Not, k.binary(Op::Ge, a, k.num(5))));
         return k.add(k.mul(cmp, a),
                      k.binary(Op::And, k.binary(Op::Eq, a, b), k.binary(Op::Ne, a, b)));
       },
       -2, 2},
      {"composite",
       [](Context& k, Expr a, Expr b) {
         Expr r = k.unary(Op::Sqrt, k.add(k.mul(a, a), k.mul(b, b)));
         return k.div(k.mul(k.unary(Op::Exp, k.neg(r)), k.unary(Op::Atan, k.div(a, b))),
                      k.add(k.num(1), k.unary(Op::Cosh, k.sub(a, b))));
       },
       0.3, 2},
  };
  std::mt19937_64 rng(7);
  for (const DiffCase& dc : cases) {
    Expr e = dc.build(cx, x, y);
    Expr dx = diff(cx, e, ix);
    Expr dy = diff(cx, e, iy);
    Expr dz = diff(cx, e, iz);
    EXPECT_TRUE(dz->is_const(0)) << dc.name;
    std::uniform_real_distribution<double> dist(dc.lo, dc.hi);
    for (int trial = 0; trial < 5; ++trial) {
      std::vector<double> p = {dist(rng), dist(rng), 0.0};
      EXPECT_TRUE(close(evaluate(dx, p), finite_difference(e, ix, p), 1e-6))
          << dc.name << " d/dx at (" << p[0] << ", " << p[1] << "): " << str(dx);
      EXPECT_TRUE(close(evaluate(dy, p), finite_difference(e, iy, p), 1e-6))
          << dc.name << " d/dy at (" << p[0] << ", " << p[1] << "): " << str(dy);
    }
  }
}

TEST_F(Sym, DerivativesOfSimpleForms) {
  EXPECT_TRUE(diff(cx, x, ix)->is_const(1));
  EXPECT_TRUE(diff(cx, y, ix)->is_const(0));
  EXPECT_TRUE(diff(cx, c(3), ix)->is_const(0));
  EXPECT_EQ(diff(cx, cx.pow(x, c(3)), ix), cx.mul(c(3), cx.pow(x, c(2))));
  EXPECT_EQ(diff(cx, f(Op::Sin, x), ix), f(Op::Cos, x));
  EXPECT_EQ(diff(cx, f(Op::Abs, x), ix), f(Op::Sign, x));
  EXPECT_EQ(diff(cx, cx.mul(x, y), ix), y);
  EXPECT_EQ(diff(cx, f(Op::Exp, cx.mul(c(2), x)), ix), cx.mul(c(2), f(Op::Exp, cx.mul(c(2), x))));
  EXPECT_EQ(diff(cx, f(Op::Min, x, y), ix), cx.select(f(Op::Lt, x, y), c(1), c(0)));
  EXPECT_EQ(diff(cx, f(Op::Lt, x, y), ix), c(0));
}

TEST_F(Sym, HigherDerivatives) {
  // d^2/dx^2 sin(x)*exp(x) = 2*cos(x)*exp(x); d^3 = 2*(cos(x) - sin(x))*exp(x).
  Expr e = cx.mul(f(Op::Sin, x), f(Op::Exp, x));
  Expr d1 = diff(cx, e, ix);
  Expr d2 = diff(cx, d1, ix);
  Expr d3 = diff(cx, d2, ix);
  for (double v : {-1.3, 0.2, 0.9, 2.1}) {
    std::vector<double> p = {v, 0, 0};
    EXPECT_TRUE(close(evaluate(d2, p), 2 * std::cos(v) * std::exp(v), 1e-13));
    EXPECT_TRUE(close(evaluate(d3, p), 2 * (std::cos(v) - std::sin(v)) * std::exp(v), 1e-13));
    EXPECT_TRUE(close(evaluate(d2, p), finite_difference(d1, ix, p), 1e-6));
  }
  // Mixed second derivative of atan2(y, x) and of x^y.
  for (Expr g : {f(Op::Atan2, y, x), cx.pow(x, y)}) {
    Expr gxy = diff(cx, diff(cx, g, ix), iy);
    Expr gyx = diff(cx, diff(cx, g, iy), ix);
    for (double v : {0.4, 1.7}) {
      std::vector<double> p = {v, 0.5 * v + 0.3, 0};
      EXPECT_TRUE(close(evaluate(gxy, p), evaluate(gyx, p), 1e-12)) << str(g);
      EXPECT_TRUE(close(evaluate(gxy, p), finite_difference(diff(cx, g, ix), iy, p), 1e-6));
    }
  }
  // d^4/dx^4 of x^4 is 24, exactly.
  Expr q = cx.pow(x, c(4));
  for (int i = 0; i < 4; ++i) q = diff(cx, q, ix);
  EXPECT_TRUE(q->is_const(24)) << str(q);
}

TEST_F(Sym, DifferentiatorSharesWorkAcrossExpressions) {
  Expr shared = f(Op::Sin, cx.mul(x, y));
  Differentiator d(cx, ix);
  Expr a = d(cx.mul(shared, x));
  size_t count = cx.node_count();
  Expr again = d(cx.mul(shared, x));
  EXPECT_EQ(a, again);
  EXPECT_EQ(cx.node_count(), count);
  EXPECT_EQ(d(shared), cx.mul(y, f(Op::Cos, cx.mul(x, y))));
}

TEST_F(Sym, SubstituterSharesWorkAcrossExpressions) {
  Expr shared = f(Op::Sin, cx.mul(x, y));
  std::unordered_map<uint32_t, Expr> by{{ix, cx.add(y, c(1))}};
  Substituter s(cx, by);
  Expr a = s(cx.mul(shared, x));
  EXPECT_EQ(a, substitute(cx, cx.mul(shared, x), by));
  size_t count = cx.node_count();
  EXPECT_EQ(s(shared), f(Op::Sin, cx.mul(cx.add(y, c(1)), y)));  // memoised: no new node
  EXPECT_EQ(cx.node_count(), count);
  EXPECT_EQ(s(y), y);  // unchanged subtrees are the same nodes
}

// A chain of n nodes in which each node uses the previous one several times: as a tree it has
// about 3^n nodes, so anything that is not memoised never finishes.
TEST_F(Sym, LongSharedChainIsLinear) {
  constexpr int n = 10000;
  std::vector<Expr> chain{x};
  for (int i = 0; i < n; ++i) {
    Expr e = chain.back();
    chain.push_back(cx.add(cx.mul(c(0.5), f(Op::Sin, e)), cx.mul(c(0.25), cx.mul(e, e))));
  }
  size_t before = cx.node_count();
  auto t0 = Clock::now();
  Expr d = diff(cx, chain.back(), ix);
  double diff_ms = ms_since(t0);
  size_t created = cx.node_count() - before;
  std::printf("[ measure  ] diff of a %d-node shared chain: %.2f ms, %zu nodes created\n", n,
              diff_ms, created);
  EXPECT_LT(created, static_cast<size_t>(20 * n));
  EXPECT_LT(diff_ms, 2000.0);

  std::vector<double> p = {0.7, 0, 0};
  t0 = Clock::now();
  double v = evaluate(d, p);
  std::printf("[ measure  ] evaluate of its derivative: %.2f ms\n", ms_since(t0));
  EXPECT_TRUE(std::isfinite(v));
  // The early part of the chain is numerically meaningful: check it against finite differences.
  Expr d30 = diff(cx, chain[30], ix);
  EXPECT_TRUE(close(evaluate(d30, p), finite_difference(chain[30], ix, p), 1e-6));

  t0 = Clock::now();
  Expr s = substitute(cx, chain.back(), {{ix, cx.add(y, c(0.1))}});
  EXPECT_EQ(free_symbols(s), std::vector<uint32_t>{iy});
  EXPECT_EQ(topological_order({&chain.back(), 1}).size(), 5u * n + 4u);  // + x, 0.5, 0.25, 2
  EXPECT_TRUE(depends_on(chain.back(), ix));
  std::string text = str(chain.back());
  EXPECT_FALSE(text.empty());
  std::printf("[ measure  ] substitute + topo order + to_string (%zu chars): %.2f ms\n",
              text.size(), ms_since(t0));
  EXPECT_LT(ms_since(t0), 5000.0);
}

// ---- substitution, analysis -------------------------------------------------------------------

TEST_F(Sym, Substitution) {
  Expr e = cx.add(cx.pow(x, c(2)), cx.mul(x, f(Op::Sin, y)));
  EXPECT_EQ(substitute(cx, e, {}), e);
  EXPECT_EQ(substitute(cx, e, {{iz, c(4)}}), e);  // z absent: same node
  Expr r = cx.add(y, c(1));
  Expr s = substitute(cx, e, {{ix, r}});
  EXPECT_EQ(s, cx.add(cx.pow(r, c(2)), cx.mul(r, f(Op::Sin, y))));
  for (double v : {-0.4, 1.3}) {
    std::vector<double> p = {0, v, 0};
    std::vector<double> q = {v + 1, v, 0};
    EXPECT_DOUBLE_EQ(evaluate(s, p), evaluate(e, q));
  }
  // Simultaneous, not sequential: x -> y, y -> x swaps.
  Expr swapped = substitute(cx, cx.sub(x, cx.mul(c(2), y)), {{ix, y}, {iy, x}});
  EXPECT_EQ(swapped, cx.sub(y, cx.mul(c(2), x)));
  // Simplification happens on rebuild: x - y with y -> x is 0.
  EXPECT_TRUE(substitute(cx, cx.sub(x, y), {{iy, x}})->is_const(0));
}

TEST_F(Sym, DependenceAndOrder) {
  Expr e = cx.add(f(Op::Sin, cx.mul(x, z)), f(Op::Cos, cx.mul(x, z)));
  EXPECT_TRUE(depends_on(e, ix));
  EXPECT_FALSE(depends_on(e, iy));
  EXPECT_EQ(free_symbols(e), (std::vector<uint32_t>{ix, iz}));
  EXPECT_TRUE(free_symbols(c(2)).empty());
  const Expr roots[2] = {e, cx.mul(x, z)};
  std::vector<Expr> order = topological_order(roots);
  EXPECT_EQ(order.size(), 6u);  // x, z, x*z, sin, cos, sum
  for (size_t i = 0; i < order.size(); ++i) {
    for (Expr ch : order[i]->children()) {
      auto pos = std::find(order.begin(), order.end(), ch) - order.begin();
      EXPECT_LT(pos, static_cast<long>(i));
    }
  }
  double out[2];
  evaluate(roots, std::vector<double>{2, 0, 0.25}, out);
  EXPECT_DOUBLE_EQ(out[0], std::sin(0.5) + std::cos(0.5));
  EXPECT_DOUBLE_EQ(out[1], 0.5);
}

TEST_F(Sym, JacobianPatternAndValues) {
  uint32_t iw = cx.new_symbol("w");
  Expr w = cx.symbol(iw);
  // f0 = x*y, f1 = sin(z), f2 = x + z^2 + w (w is not a column), f3 = 5
  const Expr fs[4] = {cx.mul(x, y), f(Op::Sin, z), cx.add({x, cx.pow(z, c(2)), w}), c(5)};
  const uint32_t cols[3] = {iz, ix, iy};  // column order differs from symbol order
  Pattern p = jacobian_pattern(fs, cols);
  EXPECT_EQ(p.rows, 4);
  EXPECT_EQ(p.cols, 3);
  // column 0 (z): rows 1, 2; column 1 (x): rows 0, 2; column 2 (y): row 0
  EXPECT_EQ(p.col, (std::vector<int32_t>{0, 0, 1, 1, 2}));
  EXPECT_EQ(p.row, (std::vector<int32_t>{1, 2, 0, 2, 0}));
  std::vector<Expr> vals = jacobian_values(cx, fs, cols, p);
  ASSERT_EQ(vals.size(), 5u);
  EXPECT_EQ(vals[0], f(Op::Cos, z));
  EXPECT_EQ(vals[1], cx.mul(c(2), z));
  EXPECT_TRUE(vals[2] == y && vals[3]->is_const(1) && vals[4] == x);
  std::vector<double> pt = {0.3, -1.1, 0.8, 2.0};
  for (size_t k = 0; k < p.nnz(); ++k) {
    EXPECT_TRUE(
        close(evaluate(vals[k], pt), finite_difference(fs[p.row[k]], cols[p.col[k]], pt), 1e-6));
  }
  const uint32_t twice[2] = {ix, ix};
  EXPECT_THROW(jacobian_pattern(fs, twice), std::logic_error);
}

// ---- printing ---------------------------------------------------------------------------------

TEST(SymPrint, ReadableInfix) {
  Context cx;
  Expr m = cx.symbol(cx.new_symbol("m"));
  Expr dx = cx.symbol(cx.new_symbol("der(x)"));
  Expr x = cx.symbol(cx.new_symbol("x"));
  Expr lambda = cx.symbol(cx.new_symbol("lambda"));
  Expr y = cx.symbol(cx.new_symbol("s.y"));
  auto s = [&](Expr e) { return to_string(cx, e); };
  auto c = [&](double v) { return cx.num(v); };
  EXPECT_EQ(s(cx.sub(cx.mul(m, dx), cx.mul({c(2), x, lambda}))), "m*der(x) - 2*x*lambda");
  EXPECT_EQ(s(cx.add(x, c(1))), "x + 1");
  EXPECT_EQ(s(cx.sub(x, c(1))), "x - 1");
  EXPECT_EQ(s(cx.neg(x)), "-x");
  EXPECT_EQ(s(cx.sub(cx.neg(x), y)), "-x - s.y");
  EXPECT_EQ(s(cx.neg(cx.pow(x, c(2)))), "-x^2");
  EXPECT_EQ(s(cx.pow(cx.add(x, y), c(2))), "(x + s.y)^2");
  EXPECT_EQ(s(cx.pow(x, cx.add(y, c(1)))), "x^(s.y + 1)");
  EXPECT_EQ(s(cx.pow(c(-2), x)), "(-2)^x");
  EXPECT_EQ(s(cx.div(x, y)), "x/s.y");
  EXPECT_EQ(s(cx.div(c(1), x)), "1/x");
  EXPECT_EQ(s(cx.div(m, cx.mul(x, y))), "m/(x*s.y)");
  EXPECT_EQ(s(cx.div(cx.mul(c(2), x), cx.pow(y, c(2)))), "2*x/s.y^2");
  EXPECT_EQ(s(cx.div(x, cx.add(x, y))), "x/(x + s.y)");
  EXPECT_EQ(s(cx.mul(c(0.5), x)), "0.5*x");
  EXPECT_EQ(s(cx.mul(x, cx.add(y, c(1)))), "x*(s.y + 1)");
  EXPECT_EQ(s(cx.pow(cx.unary(Op::Sin, x), c(2))), "sin(x)^2");
  EXPECT_EQ(s(cx.binary(Op::Atan2, y, x)), "atan2(s.y, x)");
  EXPECT_EQ(s(cx.pow(x, c(0.5))), "x^0.5");
  EXPECT_EQ(s(cx.select(cx.binary(Op::Lt, x, y), x, cx.neg(y))), "if x < s.y then x else -s.y");
  EXPECT_EQ(s(cx.add(x, cx.select(cx.binary(Op::Gt, x, c(0)), x, c(0)))),
            "x + (if x > 0 then x else 0)");
  EXPECT_EQ(
      s(cx.binary(Op::And, cx.binary(Op::Lt, x, y), cx.unary(Op::Not, cx.binary(Op::Eq, x, m)))),
      "x < s.y and not m == x");
  EXPECT_EQ(s(cx.binary(Op::Le, cx.add(x, c(1)), y)), "x + 1 <= s.y");
  EXPECT_EQ(s(c(-1.5)), "-1.5");
  EXPECT_EQ(s(c(1e-12)), "1e-12");
  EXPECT_EQ(s(cx.sub(x, cx.mul(c(-3), y))), "x + 3*s.y");
  EXPECT_EQ(s(cx.mul(cx.pow(x, c(0.5)), cx.pow(y, c(-1.5)))), "x^0.5/s.y^1.5");
  // Parentheses exactly where precedence needs them.
  EXPECT_EQ(s(cx.pow(cx.pow(x, y), c(0.5))), "(x^s.y)^0.5");
  EXPECT_EQ(s(cx.pow(x, cx.pow(y, m))), "x^(s.y^m)");
  EXPECT_EQ(s(cx.pow(cx.neg(x), c(0.5))), "(-x)^0.5");
  EXPECT_EQ(s(cx.pow(cx.mul(x, y), c(0.5))), "(x*s.y)^0.5");
  EXPECT_EQ(s(cx.binary(Op::Eq, cx.binary(Op::Lt, x, y), m)), "m == (x < s.y)");
  Expr a = cx.binary(Op::Lt, x, y), b = cx.binary(Op::Gt, m, x), d = cx.binary(Op::Ne, y, m);
  EXPECT_EQ(s(cx.binary(Op::Or, cx.binary(Op::And, a, b), d)), "m <> s.y or x < s.y and m > x");
  EXPECT_EQ(s(cx.binary(Op::And, cx.binary(Op::Or, a, b), d)), "m <> s.y and (x < s.y or m > x)");
  EXPECT_EQ(s(cx.unary(Op::Not, cx.binary(Op::And, a, b))), "not (x < s.y and m > x)");
  EXPECT_EQ(s(cx.mul(x, cx.select(a, x, y))), "x*(if x < s.y then x else s.y)");
  EXPECT_EQ(s(cx.select(cx.select(a, x, y), m, x)),
            "if (if x < s.y then x else s.y) then m else x");
  EXPECT_EQ(s(cx.unary(Op::Sin, cx.add(x, y))), "sin(x + s.y)");
}

// ---- performance ----

std::string fmt_name(int i) {
  std::string s = std::to_string(i);
  s.insert(s.begin(), 'q');  // (not "q" + s: GCC 12 reports a false -Wrestrict there)
  return s;
}

TEST(SymPerf, NodeConstructionRate) {
  Context cx;
  constexpr int kSymbols = 2000;
  std::vector<Expr> v;
  for (int i = 0; i < kSymbols; ++i) v.push_back(cx.symbol(cx.new_symbol(fmt_name(i))));
  // A model-like workload: thousands of residuals of a few terms each, plus their derivatives.
  auto t0 = Clock::now();
  size_t before = cx.node_count();
  std::vector<Expr> residuals;
  for (int i = 0; i < kSymbols; ++i) {
    Expr a = v[i], b = v[(i + 1) % kSymbols], d = v[(i + 7) % kSymbols];
    Expr r = cx.add({cx.mul({cx.num(1.0 + i), a, cx.unary(Op::Cos, b)}),
                     cx.neg(cx.mul(d, cx.unary(Op::Sin, cx.sub(a, b)))),
                     cx.pow(cx.add(a, cx.num(0.5)), cx.num(3)), cx.num(0.25 * i)});
    residuals.push_back(r);
  }
  double build_ms = ms_since(t0);
  size_t built = cx.node_count() - before;
  t0 = Clock::now();
  std::vector<uint32_t> cols(kSymbols);
  for (int i = 0; i < kSymbols; ++i) cols[i] = static_cast<uint32_t>(i);
  Pattern p = jacobian_pattern(residuals, cols);
  std::vector<Expr> jac = jacobian_values(cx, residuals, cols, p);
  double jac_ms = ms_since(t0);
  std::printf(
      "[ measure  ] %d residuals: %zu nodes in %.2f ms (%.1f ns/node); "
      "Jacobian (%zu nonzeros, %zu nodes total) in %.2f ms\n",
      kSymbols, built, build_ms, 1e6 * build_ms / built, p.nnz(), cx.node_count(), jac_ms);
  EXPECT_EQ(p.nnz(), 3u * kSymbols);
  EXPECT_LT(build_ms + jac_ms, 1000.0);

  // Raw rate: distinct binary products and sums.
  t0 = Clock::now();
  before = cx.node_count();
  for (int i = 0; i < 300; ++i) {
    for (int j = 0; j < 300; ++j) cx.add(cx.mul(v[i], v[j + 300]), v[(i * 7 + j) % kSymbols]);
  }
  double ms = ms_since(t0);
  size_t made = cx.node_count() - before;
  std::printf(
      "[ measure  ] raw construction: %zu nodes in %.2f ms = %.1f ns/node (%.1f M nodes/s)\n", made,
      ms, 1e6 * ms / made, made / ms / 1e3);
}

}  // namespace
}  // namespace mbs::sym
