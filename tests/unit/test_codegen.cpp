// Tests of kernel lowering and JIT compilation: JIT results against the interpreter (sym::evaluate)
// on random expressions over every op, the non-finite status code, several kernels per module,
// empty kernels, IR text, error reporting, and compile-time measurements.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "compiler/codegen/Jit.h"
#include "tests/unit/ir_test_util.h"

namespace mbs::codegen {
namespace {

using sym::Context;
using sym::Expr;
using sym::Op;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

std::unique_ptr<JitModule> compile_or_fail(const Context& cx, std::span<const KernelSpec> kernels,
                                           int opt_level = 2, std::string* ir = nullptr) {
  std::string error;
  JitOptions options;
  options.opt_level = opt_level;
  auto jit = JitModule::compile(cx, kernels, options, &error, ir);
  EXPECT_NE(jit, nullptr) << error;
  EXPECT_TRUE(jit == nullptr || error.empty()) << error;
  return jit;
}

// Random expressions over every op, shaped so that every subexpression stays in the domain of
// the function applied to it (log of a positive number, asin of |u| < 1, ...) for inputs in
// [-1, 1]: the comparison with the interpreter then tests code generation, not domain errors.
class RandomExpr {
 public:
  RandomExpr(Context& cx, std::vector<Expr> symbols, uint64_t seed)
      : cx_(cx), symbols_(std::move(symbols)), rng_(seed) {}

  Expr operator()(int depth) {
    if (depth <= 0 || pick(6) == 0) return leaf();
    Expr a = (*this)(depth - 1);
    switch (pick(36)) {
      case 0:
        return cx_.add(a, (*this)(depth - 1));
      case 1:
        return cx_.add({a, (*this)(depth - 1), (*this)(depth - 2)});
      case 2:
        return cx_.sub(a, (*this)(depth - 1));
      case 3:
        return cx_.mul(a, (*this)(depth - 1));
      case 4:
        return cx_.mul({cx_.num(uniform(-3, 3)), a, (*this)(depth - 1)});
      case 5:
        return cx_.div(a, positive((*this)(depth - 1)));
      case 6:
        return cx_.neg(a);
      case 7:
        return cx_.pow(bounded(a), cx_.num(static_cast<double>(pick(5))));  // 0..4
      case 8:
        return cx_.pow(positive(a), cx_.num(-static_cast<double>(1 + pick(5))));  // -1..-5
      case 9:
        return cx_.pow(positive(a), cx_.num(0.5));
      case 10:
        return cx_.pow(positive(a), cx_.num(uniform(-2.5, 2.5)));
      case 11:
        return cx_.pow(positive(a), bounded((*this)(depth - 1)));
      case 12:
        return cx_.unary(Op::Sin, a);
      case 13:
        return cx_.unary(Op::Cos, a);
      case 14:
        return cx_.unary(Op::Tan, cx_.mul(cx_.num(1.2), bounded(a)));
      case 15:
        return cx_.unary(Op::Asin, cx_.mul(cx_.num(0.95), bounded(a)));
      case 16:
        return cx_.unary(Op::Acos, cx_.mul(cx_.num(-0.95), bounded(a)));
      case 17:
        return cx_.unary(Op::Atan, a);
      case 18:
        return cx_.binary(Op::Atan2, a, positive((*this)(depth - 1)));
      case 19:
        return cx_.binary(Op::Atan2, positive(a), (*this)(depth - 1));
      case 20:
        return cx_.unary(Op::Sinh, cx_.mul(cx_.num(3), bounded(a)));
      case 21:
        return cx_.unary(Op::Cosh, cx_.mul(cx_.num(3), bounded(a)));
      case 22:
        return cx_.unary(Op::Tanh, a);
      case 23:
        return cx_.unary(Op::Exp, cx_.mul(cx_.num(3), bounded(a)));
      case 24:
        return cx_.unary(Op::Log, positive(a));
      case 25:
        return cx_.unary(Op::Log10, positive(a));
      case 26:
        return cx_.unary(Op::Sqrt, positive(a));
      case 27:
        return cx_.unary(Op::Abs, a);
      case 28:
        return cx_.mul(cx_.unary(Op::Sign, a), (*this)(depth - 1));
      case 29:
        return cx_.binary(Op::Min, a, (*this)(depth - 1));
      case 30:
        return cx_.binary(Op::Max, a, (*this)(depth - 1));
      case 31:
        return cx_.select(condition(depth - 1), a, (*this)(depth - 1));
      case 32:
        return cx_.mul(condition(depth - 1), a);
      case 33:
        return cx_.add(condition(depth - 1), a);
      case 34:
        return cx_.select(a, (*this)(depth - 1), (*this)(depth - 1));  // truth of a number
      default:
        return cx_.unary(Op::Not, a);
    }
  }

 private:
  size_t pick(size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng_); }
  double uniform(double lo, double hi) {
    return std::uniform_real_distribution<double>(lo, hi)(rng_);
  }

  Expr leaf() {
    if (pick(3) == 0) return cx_.num(uniform(-2, 2));
    return symbols_[pick(symbols_.size())];
  }
  // Into (-1, 1).
  Expr bounded(Expr e) { return pick(2) ? cx_.unary(Op::Tanh, e) : cx_.unary(Op::Sin, e); }
  // Into [0.1, inf) (or (0, inf) for exp).
  Expr positive(Expr e) {
    switch (pick(3)) {
      case 0:
        return cx_.add(cx_.num(0.1), cx_.pow(e, cx_.num(2)));
      case 1:
        return cx_.unary(Op::Exp, bounded(e));
      default:
        return cx_.add(cx_.num(1.5), bounded(e));
    }
  }
  Expr condition(int depth) {
    Expr a = (*this)(depth);
    Expr b = (*this)(depth);
    static const Op cmp[] = {Op::Lt, Op::Le, Op::Gt, Op::Ge, Op::Eq, Op::Ne};
    Expr c = cx_.binary(cmp[pick(6)], a, b);
    switch (pick(4)) {
      case 0:
        return cx_.binary(Op::And, c, cx_.binary(Op::Lt, b, cx_.num(0.3)));
      case 1:
        return cx_.binary(Op::Or, c, cx_.binary(Op::Gt, a, cx_.num(0.5)));
      case 2:
        return cx_.unary(Op::Not, c);
      default:
        return c;
    }
  }

  Context& cx_;
  std::vector<Expr> symbols_;
  std::mt19937_64 rng_;
};

struct Agreement {
  size_t compared = 0;
  size_t identical = 0;
  double worst = 0;  // relative error, floor 1
};

// Kernels a and b (the same outputs, compiled two ways) give the same values, bit for bit, and
// the same status at `points` random points in [-2, 2].
void expect_bitwise_equal(KernelFn a, KernelFn b, size_t n_symbols, size_t n_outputs, uint64_t seed,
                          int points = 5) {
  ASSERT_TRUE(a && b);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(-2, 2);
  for (int p = 0; p < points; ++p) {
    std::vector<double> v(n_symbols);
    for (double& value : v) value = dist(rng);
    std::vector<double> out_a(n_outputs), out_b(n_outputs);
    EXPECT_EQ(a(v.data(), out_a.data()), b(v.data(), out_b.data()));
    for (size_t i = 0; i < n_outputs; ++i) ASSERT_EQ(out_a[i], out_b[i]) << "output " << i;
  }
}

// Runs every kernel at `points` random inputs and compares with the interpreter.
Agreement compare_with_interpreter(const Context& cx, const JitModule& jit,
                                   std::span<const KernelSpec> kernels, size_t nsymbols, int points,
                                   uint64_t seed) {
  Agreement a;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(-1, 1);
  for (int p = 0; p < points; ++p) {
    std::vector<double> v(nsymbols);
    for (double& x : v) x = dist(rng);
    for (const KernelSpec& k : kernels) {
      KernelFn fn = jit.lookup(k.name);
      EXPECT_NE(fn, nullptr) << k.name;
      if (fn == nullptr) continue;
      std::vector<double> got(k.outputs.size(), -12345.0);
      std::vector<double> want(k.outputs.size());
      sym::evaluate(k.outputs, v, want);
      int32_t status = fn(v.data(), got.data());
      int32_t want_status = 0;
      for (size_t i = 0; i < want.size(); ++i) {
        if (!std::isfinite(want[i])) {
          want_status = static_cast<int32_t>(i + 1);
          break;
        }
      }
      EXPECT_EQ(status, want_status) << k.name;
      for (size_t i = 0; i < want.size(); ++i) {
        double err = std::fabs(got[i] - want[i]) / std::max(1.0, std::fabs(want[i]));
        ++a.compared;
        if (got[i] == want[i] || (std::isnan(got[i]) && std::isnan(want[i]))) {
          ++a.identical;
          continue;
        }
        a.worst = std::max(a.worst, err);
        EXPECT_LE(err, 1e-12) << k.name << " output " << i << ": jit " << got[i] << ", interpreter "
                              << want[i] << "\n  " << sym::to_string(cx, k.outputs[i]);
      }
    }
  }
  return a;
}

class Codegen : public ::testing::Test {
 protected:
  Context cx;
  std::vector<Expr> sym;
  void SetUp() override {
    for (const char* name : {"x", "y", "z", "s.w", "der(x)"})
      sym.push_back(cx.symbol(cx.new_symbol(name)));
  }
};

TEST_F(Codegen, RandomExpressionsAgreeWithInterpreter) {
  RandomExpr gen(cx, sym, 2024);
  // 400 expressions: 200 one-output kernels and 10 kernels of 20 outputs each, in one module.
  std::vector<KernelSpec> kernels;
  for (int i = 0; i < 200; ++i) kernels.push_back({"single_" + std::to_string(i), {gen(5)}});
  for (int i = 0; i < 10; ++i) {
    KernelSpec k{"multi_" + std::to_string(i), {}};
    for (int j = 0; j < 20; ++j) k.outputs.push_back(gen(6));
    kernels.push_back(std::move(k));
  }
  size_t nodes = sym::topological_order([&] {
                   std::vector<Expr> all;
                   for (auto& k : kernels)
                     all.insert(all.end(), k.outputs.begin(), k.outputs.end());
                   return all;
                 }())
                     .size();
  for (int level : {2, 0, 3}) {
    auto t0 = Clock::now();
    auto jit = compile_or_fail(cx, kernels, level);
    ASSERT_NE(jit, nullptr);
    double ms = ms_since(t0);
    Agreement a = compare_with_interpreter(cx, *jit, kernels, sym.size(), 8, 99);
    std::printf(
        "[ measure  ] O%d: %zu kernels, %zu distinct nodes compiled in %.1f ms; %zu values, "
        "%zu bit-identical to the interpreter, worst relative error %.2e\n",
        level, kernels.size(), nodes, ms, a.compared, a.identical, a.worst);
    EXPECT_GT(a.identical, a.compared / 2);  // only integer powers may differ in the last bits
  }
}

TEST_F(Codegen, EveryOpAtEdgeValues) {
  // One kernel per op, evaluated at inputs including 0, negative numbers, +-inf and NaN: the JIT
  // must implement the interpreter's semantics exactly (NaN truth, ordered comparisons, ...).
  Expr x = sym[0], y = sym[1];
  std::vector<KernelSpec> kernels;
  for (int i = 0; i <= static_cast<int>(Op::Cancelled); ++i) {
    auto op = static_cast<Op>(i);
    Expr e;
    int arity = sym::op_arity(op);
    if (op == Op::Const || op == Op::Symbol) continue;
    if (op == Op::Add)
      e = cx.add(x, y);
    else if (op == Op::Mul)
      e = cx.mul(x, y);
    else if (op == Op::Pow)
      e = cx.pow(x, y);
    else if (op == Op::Select)
      e = cx.select(x, y, cx.num(7));
    else if (arity == 1)
      e = cx.unary(op, x);
    else
      e = cx.binary(op, x, y);
    kernels.push_back({"op_" + std::string(sym::op_name(op)), {e}});
  }
  for (int n : {-5, -4, -3, -2, -1, 2, 3, 4, 5}) {
    kernels.push_back({"powi_" + std::to_string(n + 5), {cx.pow(x, cx.num(n))}});
  }
  kernels.push_back({"pow_half", {cx.pow(x, cx.num(0.5))}});
  const double inf = INFINITY, nan = NAN;
  const double values[] = {0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 1e300, -1e-300, inf, -inf, nan};
  auto jit = compile_or_fail(cx, kernels);
  ASSERT_NE(jit, nullptr);
  for (double a : values) {
    for (double b : values) {
      std::vector<double> v = {a, b, 0, 0, 0};
      for (const KernelSpec& k : kernels) {
        double got = -1, want = sym::evaluate(k.outputs[0], v);
        jit->lookup(k.name)(v.data(), &got);
        bool same = got == want || (std::isnan(got) && std::isnan(want));
        if (k.name.starts_with("powi_") && !same && std::isfinite(want)) {
          same = std::fabs(got - want) <= 4e-16 * std::fabs(want);  // multiplication vs pow
        }
        if (k.name.starts_with("powi_") || k.name == "pow_half") {
          // x^n by multiplication and sqrt may disagree with pow on the sign of a zero result
          // and on overflow/underflow boundaries; compare as values only.
          same = same || (got == 0 && want == 0) ||
                 (std::isinf(got) && std::isinf(want) && (got > 0) == (want > 0)) ||
                 (k.name == "pow_half" && a == -inf);
        }
        EXPECT_TRUE(same) << k.name << "(" << a << ", " << b << "): jit " << got << ", interpreter "
                          << want;
      }
    }
  }
}

TEST_F(Codegen, NonFiniteStatusNamesTheFirstBadOutput) {
  Expr x = sym[0], y = sym[1], z = sym[2];
  const KernelSpec k{"residual", {x, cx.unary(Op::Log, y), cx.div(cx.num(1), z), cx.mul(x, y)}};
  auto jit = compile_or_fail(cx, {&k, 1});
  ASSERT_NE(jit, nullptr);
  KernelFn fn = jit->lookup("residual");
  ASSERT_NE(fn, nullptr);
  double out[4];
  std::vector<double> v = {2, 1, 4, 0, 0};
  EXPECT_EQ(fn(v.data(), out), 0);
  EXPECT_DOUBLE_EQ(out[2], 0.25);
  v = {2, -1, 4, 0, 0};  // log(-1) = NaN
  EXPECT_EQ(fn(v.data(), out), 2);
  EXPECT_TRUE(std::isnan(out[1]));  // outputs are stored even when not finite
  EXPECT_DOUBLE_EQ(out[3], -2.0);
  v = {2, 1, 0, 0, 0};  // 1/0 = inf
  EXPECT_EQ(fn(v.data(), out), 3);
  EXPECT_TRUE(std::isinf(out[2]));
  v = {2, 0, 0, 0, 0};  // log(0) = -inf and 1/0 = inf: the first one counts
  EXPECT_EQ(fn(v.data(), out), 2);
  v = {NAN, 1, 1, 0, 0};
  EXPECT_EQ(fn(v.data(), out), 1);
  v = {1e300, 1e300, 1, 0, 0};  // overflow of x*y
  EXPECT_EQ(fn(v.data(), out), 4);
}

TEST_F(Codegen, SeveralKernelsEmptyKernelsAndLookup) {
  Expr x = sym[0], y = sym[1];
  const KernelSpec kernels[] = {
      {"f", {cx.add(x, y), cx.num(3)}},
      {"g", {cx.mul(x, y), x, cx.binary(Op::Lt, x, y)}},
      {"nothing", {}},
      {"h", {cx.unary(Op::Sin, cx.add(x, y))}},  // shares x + y with f
  };
  auto jit = compile_or_fail(cx, kernels);
  ASSERT_NE(jit, nullptr);
  std::vector<double> v = {0.5, 2, 0, 0, 0};
  double out[3] = {-1, -1, -1};
  ASSERT_NE(jit->lookup("f"), nullptr);
  EXPECT_EQ(jit->lookup("f")(v.data(), out), 0);
  EXPECT_EQ(out[0], 2.5);
  EXPECT_EQ(out[1], 3.0);
  EXPECT_EQ(out[2], -1);  // untouched
  EXPECT_EQ(jit->lookup("g")(v.data(), out), 0);
  EXPECT_EQ(out[0], 1.0);
  EXPECT_EQ(out[1], 0.5);
  EXPECT_EQ(out[2], 1.0);
  double sentinel[1] = {42};
  ASSERT_NE(jit->lookup("nothing"), nullptr);
  EXPECT_EQ(jit->lookup("nothing")(v.data(), sentinel), 0);
  EXPECT_EQ(sentinel[0], 42);
  EXPECT_EQ(jit->lookup("nothing")(v.data(), nullptr), 0);
  EXPECT_EQ(jit->lookup("h")(v.data(), out), 0);
  EXPECT_EQ(out[0], std::sin(2.5));
  EXPECT_EQ(jit->lookup("missing"), nullptr);

  // An empty module works too.
  auto none = compile_or_fail(cx, {});
  ASSERT_NE(none, nullptr);
  EXPECT_EQ(none->lookup("f"), nullptr);

  // Kernels may be called from several threads at once.
  auto worker = [&](double base, double* result) {
    double sum = 0, o[3];
    std::vector<double> w = {base, 1, 0, 0, 0};
    for (int i = 0; i < 10000; ++i) {
      w[1] = i * 1e-3;
      jit->lookup("g")(w.data(), o);
      sum += o[0];
    }
    *result = sum;
  };
  double r1 = 0, r2 = 0;
  std::thread t1(worker, 1.0, &r1), t2(worker, 2.0, &r2);
  t1.join();
  t2.join();
  EXPECT_DOUBLE_EQ(r2, 2 * r1);
}

TEST_F(Codegen, IdenticalKernelsAreCompiledOnceAndBothNamesWork) {
  Expr x = sym[0], y = sym[1];
  const KernelSpec kernels[] = {{"a", {cx.add(x, y), cx.mul(x, y)}},
                                {"b", {cx.add(x, y), cx.mul(x, y)}},
                                {"c", {cx.sub(x, y)}}};
  auto jit = compile_or_fail(cx, kernels);
  ASSERT_NE(jit, nullptr);
  ASSERT_NE(jit->lookup("a"), nullptr);
  EXPECT_EQ(jit->lookup("a"), jit->lookup("b"));
  std::vector<double> v = {3, 4, 0, 0, 0};
  double out[2];
  EXPECT_EQ(jit->lookup("b")(v.data(), out), 0);
  EXPECT_EQ(out[0], 7.0);
  EXPECT_EQ(out[1], 12.0);
  EXPECT_EQ(jit->lookup("c")(v.data(), out), 0);
  EXPECT_EQ(out[0], -1.0);
}

TEST_F(Codegen, ObjectCacheIsReusedAndADamagedEntryIsRecompiled) {
  namespace fs = std::filesystem;
  fs::path dir = fs::path(testing::TempDir()) / ("mbs_cache_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  Expr x = sym[0], y = sym[1];
  const KernelSpec kernels[] = {{"k", {cx.unary(Op::Sin, cx.mul(x, y)), cx.add(x, cx.num(2))}}};
  JitOptions o;
  o.cache_dir = dir.string();
  std::vector<double> v = {0.3, 2, 0, 0, 0};
  auto run = [&](size_t expect_hits) {
    std::string error;
    auto jit = JitModule::compile(cx, kernels, o, &error);
    ASSERT_NE(jit, nullptr) << error;
    EXPECT_EQ(jit->objects(), 1u);
    EXPECT_EQ(jit->cache_hits(), expect_hits);
    double out[2];
    EXPECT_EQ(jit->lookup("k")(v.data(), out), 0);
    EXPECT_EQ(out[0], std::sin(0.6));
    EXPECT_EQ(out[1], 2.3);
  };
  run(0);  // compiled and stored
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir)) files += e.path().extension() == ".o";
  EXPECT_EQ(files, 1u);
  run(1);  // loaded from the cache
  // another optimisation level is another key
  o.opt_level = 1;
  run(0);
  o.opt_level = 2;
  // a damaged file is not trusted: the kernels are compiled afresh
  for (const auto& e : fs::directory_iterator(dir)) std::ofstream(e.path()) << "not an object file";
  {
    std::string error;
    auto jit = JitModule::compile(cx, kernels, o, &error);
    ASSERT_NE(jit, nullptr) << error;
    EXPECT_EQ(jit->cache_hits(), 0u);
    ASSERT_EQ(jit->cache_damage().size(), 1u);  // reported (test_codegen_cache tests the rest)
    EXPECT_EQ(jit->cache_damage()[0].reason, "truncated to 18 bytes, shorter than its header");
    double out[2];
    EXPECT_EQ(jit->lookup("k")(v.data(), out), 0);
    EXPECT_EQ(out[1], 2.3);
  }
  fs::remove_all(dir);
}

TEST_F(Codegen, IrText) {
  Expr x = sym[0], y = sym[1];
  const KernelSpec kernels[] = {
      {"residual", {cx.sub(cx.mul(sym[4], x), cx.unary(Op::Tan, y)), cx.pow(x, cx.num(3))}},
      {"jac", {cx.unary(Op::Cos, x)}},
  };
  std::string ir = lower_to_llvm_ir(cx, kernels);
  EXPECT_NE(ir.find("define i32 @residual(ptr"), std::string::npos) << ir;
  EXPECT_NE(ir.find("define i32 @jac(ptr"), std::string::npos) << ir;
  EXPECT_NE(ir.find("declare double @tan(double)"), std::string::npos) << ir;
  EXPECT_NE(ir.find("@llvm.cos.f64"), std::string::npos) << ir;
  EXPECT_EQ(ir.find("@llvm.pow"), std::string::npos) << "x^3 is expanded into multiplications";
  EXPECT_NE(ir.find("%\"der(x)\" = load double"), std::string::npos) << "symbols keep names";
  std::string optimised;
  auto jit = compile_or_fail(cx, kernels, 2, &optimised);
  ASSERT_NE(jit, nullptr);
  EXPECT_NE(optimised.find("define i32 @residual("), std::string::npos) << optimised;
  EXPECT_NE(optimised.find("target triple"), std::string::npos);
}

TEST_F(Codegen, ErrorsAreReportedNotFatal) {
  std::string error;
  for (const char* bad : {"", "1abc", "a-b", "sin", "tan"}) {
    const KernelSpec k{bad, {sym[0]}};
    auto jit = JitModule::compile(cx, {&k, 1}, {}, &error);
    EXPECT_EQ(jit, nullptr) << bad;
    EXPECT_NE(error.find("kernel name"), std::string::npos) << error;
  }
  const KernelSpec twice[] = {{"k", {sym[0]}}, {"k", {sym[1]}}};
  EXPECT_EQ(JitModule::compile(cx, twice, {}, &error), nullptr);
  EXPECT_NE(error.find("used twice"), std::string::npos) << error;
  JitOptions bad_level;
  bad_level.opt_level = 7;
  EXPECT_EQ(JitModule::compile(cx, twice, bad_level, &error), nullptr);
  EXPECT_NE(error.find("opt_level"), std::string::npos) << error;
  EXPECT_NE(lower_to_llvm_ir(cx, twice).find("; error:"), std::string::npos);
}

// ---- compile time -------------------------------------------------------------------------------

// A small model: the double pendulum from its Lagrangian, derived symbolically. Kernels: the
// two residuals of the equations of motion, their Jacobian with respect to the accelerations,
// velocities and angles (12 entries) and sensor outputs (tip position, energy).
std::vector<KernelSpec> double_pendulum(Context& cx) {
  std::vector<uint32_t> q, dq, ddq;
  for (const char* n : {"phi1", "phi2"}) q.push_back(cx.new_symbol(n));
  for (const char* n : {"der(phi1)", "der(phi2)"}) dq.push_back(cx.new_symbol(n));
  for (const char* n : {"der(der(phi1))", "der(der(phi2))"}) ddq.push_back(cx.new_symbol(n));
  auto s = [&](uint32_t i) { return cx.symbol(i); };
  Expr l1 = cx.num(0.7), l2 = cx.num(0.5), m1 = cx.num(1.3), m2 = cx.num(0.8), g = cx.num(9.81);
  Expr x1 = cx.mul(l1, cx.unary(Op::Sin, s(q[0])));
  Expr y1 = cx.neg(cx.mul(l1, cx.unary(Op::Cos, s(q[0]))));
  Expr x2 = cx.add(x1, cx.mul(l2, cx.unary(Op::Sin, s(q[1]))));
  Expr y2 = cx.sub(y1, cx.mul(l2, cx.unary(Op::Cos, s(q[1]))));
  // Time derivative of an expression of q and dq: sum of partials times dq and ddq.
  auto ddt = [&](Expr f) {
    std::vector<Expr> terms;
    for (size_t i = 0; i < 2; ++i) {
      terms.push_back(cx.mul(sym::diff(cx, f, q[i]), s(dq[i])));
      terms.push_back(cx.mul(sym::diff(cx, f, dq[i]), s(ddq[i])));
    }
    return cx.add(terms);
  };
  auto sq = [&](Expr e) { return cx.pow(e, cx.num(2)); };
  Expr kinetic = cx.add(cx.mul({cx.num(0.5), m1, cx.add(sq(ddt(x1)), sq(ddt(y1)))}),
                        cx.mul({cx.num(0.5), m2, cx.add(sq(ddt(x2)), sq(ddt(y2)))}));
  Expr potential = cx.mul(g, cx.add(cx.mul(m1, y1), cx.mul(m2, y2)));
  Expr lagrangian = cx.sub(kinetic, potential);
  std::vector<Expr> residual;
  for (size_t i = 0; i < 2; ++i) {
    residual.push_back(
        cx.sub(ddt(sym::diff(cx, lagrangian, dq[i])), sym::diff(cx, lagrangian, q[i])));
  }
  std::vector<Expr> jacobian;
  for (Expr r : residual) {
    for (uint32_t v : {ddq[0], ddq[1], dq[0], dq[1], q[0], q[1]}) {
      jacobian.push_back(sym::diff(cx, r, v));
    }
  }
  std::vector<Expr> sensors = {x2, y2, cx.add(kinetic, potential), cx.binary(Op::Atan2, y2, x2)};
  return {{"residual", residual}, {"jacobian", jacobian}, {"sensors", sensors}};
}

TEST(CodegenTime, SmallModelCompileTime) {
  Context cx;
  std::vector<KernelSpec> kernels = double_pendulum(cx);
  std::string sizes;
  for (const KernelSpec& k : kernels) {
    sizes += " " + k.name + "=" + std::to_string(sym::topological_order(k.outputs).size());
  }
  // Check the physics once: the residual at rest hanging down is 0, and the Jacobian
  // with respect to the accelerations is the mass matrix (symmetric, positive definite).
  std::vector<double> v = {0, 0, 0, 0, 0, 0};
  double r[2];
  std::vector<double> times;
  for (int rep = 0; rep < 9; ++rep) {
    auto t0 = Clock::now();
    auto jit = compile_or_fail(cx, kernels);
    ASSERT_NE(jit, nullptr);
    times.push_back(ms_since(t0));
    if (rep == 0) {
      EXPECT_EQ(jit->lookup("residual")(v.data(), r), 0);
      EXPECT_NEAR(r[0], 0, 1e-15);
      double jac[12];
      std::vector<double> w = {0.3, -0.2, 0.1, 0.4, 0, 0};
      EXPECT_EQ(jit->lookup("jacobian")(w.data(), jac), 0);
      EXPECT_NEAR(jac[1], jac[6], 1e-14);                                  // M12 = M21
      EXPECT_NEAR(jac[0], (1.3 + 0.8) * 0.7 * 0.7, 1e-14);                 // M11 = (m1 + m2) l1^2
      EXPECT_NEAR(jac[1], 0.8 * 0.7 * 0.5 * std::cos(0.3 - -0.2), 1e-14);  // m2 l1 l2 cos(q1 - q2)
      EXPECT_NEAR(jac[7], 0.8 * 0.5 * 0.5, 1e-14);                         // M22 = m2 l2^2
      compare_with_interpreter(cx, *jit, kernels, cx.symbol_count(), 5, 1);
    }
  }
  double first = times[0];
  std::sort(times.begin() + 1, times.end());
  std::printf(
      "[ measure  ] small model (kernel sizes in nodes:%s) O2 compile() to function "
      "pointers: first %.2f ms (with one-time LLVM set-up), then min %.2f, median %.2f ms\n",
      sizes.c_str(), first, times[1], times[times.size() / 2 + 1]);
  for (int level : {0, 1, 3}) {
    double best = 1e30;
    for (int rep = 0; rep < 5; ++rep) {
      auto t0 = Clock::now();
      auto jit = compile_or_fail(cx, kernels, level);
      best = std::min(best, ms_since(t0));
    }
    std::printf("[ measure  ] small model O%d compile: min %.2f ms\n", level, best);
  }
}

// Microseconds per call of a kernel (best of 5 rounds of 100 calls).
double run_time_us(KernelFn fn, size_t nsymbols, size_t noutputs) {
  std::vector<double> v(nsymbols, 0.3), out(noutputs);
  double best = 1e30;
  for (int round = 0; round < 5; ++round) {
    auto t0 = Clock::now();
    for (int i = 0; i < 100; ++i) {
      v[0] = 1e-3 * i;
      fn(v.data(), out.data());
    }
    best = std::min(best, 1e3 * ms_since(t0) / 100);
  }
  return best;
}

TEST_F(Codegen, BigKernelCompileTime) {
  // Chains of shared stages (1300 stages by default; set MBS_BIG_KERNEL_STAGES to measure other
  // sizes), one output every 10 stages: "libm" stages call sin, cos and tanh (9.4k nodes by
  // default), "arith" stages only add and multiply.
  int stages = 1300;
  if (const char* s = std::getenv("MBS_BIG_KERNEL_STAGES")) stages = std::atoi(s);
  std::mt19937_64 rng(5);
  KernelSpec libm{"libm", {}};
  KernelSpec arith{"arith", {}};
  for (KernelSpec* k : {&libm, &arith}) {
    std::vector<Expr> stage(sym.begin(), sym.end());
    for (int i = 0; i < stages; ++i) {
      Expr a = stage[rng() % stage.size()], b = stage[rng() % stage.size()], last = stage.back();
      Expr e = k == &libm ? cx.add({cx.mul(cx.num(0.5), cx.unary(Op::Sin, a)),
                                    cx.mul({cx.num(0.3), b, cx.unary(Op::Cos, last)}),
                                    cx.unary(Op::Tanh, cx.sub(a, b))})
                          : cx.add({cx.mul(cx.num(0.5), a), cx.mul({cx.num(0.3), b, last}),
                                    cx.neg(cx.mul(a, a))});
      stage.push_back(e);
      if (i % 10 == 9) k->outputs.push_back(e);
    }
  }
  for (const KernelSpec* k : {&libm, &arith}) {
    size_t nodes = sym::topological_order(k->outputs).size();
    for (int level : {0, 1, 2}) {
      JitOptions options;
      options.opt_level = level;
      options.max_optimised_kernel_nodes = SIZE_MAX;  // measure the levels themselves
      options.max_optimised_total_nodes = SIZE_MAX;
      std::string error;
      auto t0 = Clock::now();
      auto jit = JitModule::compile(cx, {k, 1}, options, &error);
      ASSERT_NE(jit, nullptr) << error;
      double ms = ms_since(t0);
      std::printf("[ measure  ] %s kernel (%zu nodes) O%d: compile %.1f ms, run %.2f us/call\n",
                  k->name.c_str(), nodes, level, ms,
                  run_time_us(jit->lookup(k->name), sym.size(), k->outputs.size()));
      compare_with_interpreter(cx, *jit, {k, 1}, sym.size(), 2, 3);
    }
  }
}

TEST_F(Codegen, HugeKernelTakesTheFastPathNextToNormalOnes) {
  // Above JitOptions' size limit (12k nodes, see kHugeKernelNodes in Jit.cpp) a kernel is
  // compiled in a module of its own with a cheaper pipeline; both objects share one JIT.
  std::vector<Expr> stage(sym.begin(), sym.end());
  std::mt19937_64 rng(11);
  KernelSpec huge{"huge", {}};
  for (int i = 0; i < 3300; ++i) {
    size_t a = rng() % stage.size(), b = rng() % stage.size();
    Expr e = cx.add({cx.mul(stage[a], cx.num(0.5)), cx.mul({cx.num(0.4), stage[b], stage.back()}),
                     cx.unary(Op::Sin, stage[b])});
    stage.push_back(e);
    if (stage.size() % 16 == 0) huge.outputs.push_back(e);
  }
  const KernelSpec kernels[] = {{"small", {cx.add(sym[0], sym[1])}}, huge};
  auto t0 = Clock::now();
  std::string ir;
  auto jit = compile_or_fail(cx, kernels, 2, &ir);
  ASSERT_NE(jit, nullptr);
  std::printf("[ measure  ] huge kernel (%zu nodes) + small kernel, O2 requested: %.1f ms\n",
              sym::topological_order(huge.outputs).size(), ms_since(t0));
  EXPECT_NE(ir.find("define i32 @small("), std::string::npos);
  EXPECT_NE(ir.find("define i32 @huge("), std::string::npos);
  // split into functions of bounded size (LowerToLlvm.cpp, kChunkNodes)
  EXPECT_NE(ir.find("@huge.part1("), std::string::npos);
  EXPECT_EQ(ir.find("@small.part0("), std::string::npos);
  compare_with_interpreter(cx, *jit, kernels, sym.size(), 3, 17);
}

TEST_F(Codegen, AKernelOfManyLoadsAndStoresIsNotOptimised) {
  // Optimised code generation is quadratic in the memory operations of one function (a
  // diagonal mass matrix of 1,600 entries took 2 s at O2, 0.03 s at O0): beyond
  // JitOptions::max_optimised_kernel_memory (symbols read + outputs) a kernel is compiled at O0.
  // A kernel of many outputs and few symbols, one of many symbols and one output, and a small
  // one under the limit, which stays optimised.
  KernelSpec stores{"stores", {}}, loads{"loads", {}}, small{"small", {}};
  for (int i = 0; i < 600; ++i) stores.outputs.push_back(cx.mul(cx.num(i + 1.0), sym[i % 2]));
  std::vector<Expr> many;
  for (int i = 0; i < 600; ++i) many.push_back(cx.symbol(cx.new_symbol("p" + std::to_string(i))));
  loads.outputs.push_back(cx.add(std::span<const Expr>(many)));
  for (int i = 0; i < 100; ++i) small.outputs.push_back(cx.mul(cx.num(i + 1.0), sym[i % 3]));
  const KernelSpec kernels[] = {stores, loads, small};
  std::string error;
  JitOptions options;
  options.opt_level = 2;
  auto jit = JitModule::compile(cx, kernels, options, &error);
  ASSERT_NE(jit, nullptr) << error;
  EXPECT_EQ(jit->optimised_kernels(), std::vector<std::string>{"small"});
  options.max_optimised_kernel_memory = SIZE_MAX;
  options.max_optimised_total_nodes = SIZE_MAX;
  auto all = JitModule::compile(cx, kernels, options, &error);
  ASSERT_NE(all, nullptr) << error;
  EXPECT_EQ(all->optimised_kernels().size(), 3u);
  compare_with_interpreter(cx, *jit, kernels, cx.symbol_count(), 2, 5);
}

// Outputs of a repeated shape are computed by loops over tables of their symbols
// (JitOptions::loop_min_outputs): the same values as straight-line code, bit for bit, and as the
// interpreter; the code is one loop body per shape, so it does not grow with the number of
// outputs (the IR's instructions at 2n against n), while without loops it doubles.
TEST_F(Codegen, RepeatedOutputsAreComputedByLoops) {
  const auto chain = [&](int n) {
    std::vector<Expr> x;
    for (int i = 0; i < n + 1; ++i) x.push_back(cx.symbol(cx.new_symbol("x" + std::to_string(i))));
    KernelSpec k{"chain" + std::to_string(n), {}};
    for (int i = 0; i < n; ++i) {
      // three shapes (one with a libm call and a select), a constant, a symbol, and one of a kind
      // at the end
      k.outputs.push_back(cx.sub(x[i + 1], cx.mul(cx.num(0.5), x[i])));
      k.outputs.push_back(cx.mul(cx.unary(Op::Sin, x[i]), cx.add(x[i + 1], cx.num(2.0))));
      k.outputs.push_back(cx.select(cx.binary(Op::Lt, x[i], x[i + 1]), x[i], cx.neg(x[i + 1])));
      k.outputs.push_back(cx.num(3.0));
      k.outputs.push_back(x[i]);
      // a constant of each output's own is a leaf (one shape); an exponent is not (x^2 is x*x,
      // x^3 x*x*x: two shapes)
      k.outputs.push_back(cx.unary(Op::Sin, cx.mul(cx.num(0.1 * (i + 1)), x[i])));
      k.outputs.push_back(cx.pow(x[i + 1], cx.num(2.0 + i % 2)));
    }
    k.outputs.push_back(cx.unary(Op::Exp, cx.add(x[0], x[1])));
    return k;
  };
  const auto instructions = mbs::testutil::ir_instructions;
  const auto compile = [&](const KernelSpec& k, size_t loop_min, std::string* ir) {
    std::string error;
    JitOptions options;
    options.opt_level = 0;
    options.loop_min_outputs = loop_min;
    auto jit = JitModule::compile(cx, std::span<const KernelSpec>(&k, 1), options, &error, ir);
    EXPECT_NE(jit, nullptr) << error;
    return jit;
  };
  const KernelSpec small = chain(200), large = chain(400);
  std::string ir_small, ir_large, ir_plain_small, ir_plain_large;
  auto looped = compile(small, 256, &ir_small);
  auto looped_large = compile(large, 256, &ir_large);
  auto plain = compile(small, SIZE_MAX, &ir_plain_small);
  compile(large, SIZE_MAX, &ir_plain_large);
  ASSERT_TRUE(looped && looped_large && plain);
  EXPECT_NE(ir_small.find("@chain200.loop7("), std::string::npos) << "eight shapes, eight loops";
  EXPECT_EQ(ir_small.find("@chain200.loop8("), std::string::npos);
  EXPECT_EQ(ir_plain_small.find(".loop"), std::string::npos);
  EXPECT_LT(instructions(ir_large), instructions(ir_small) + 20);
  EXPECT_GT(instructions(ir_plain_large), instructions(ir_plain_small) * 19 / 10);
  // the same values as straight-line code, bit for bit, at random points
  KernelFn a = looped->lookup("chain200"), b = plain->lookup("chain200");
  expect_bitwise_equal(a, b, cx.symbol_count(), small.outputs.size(), 5);
  compare_with_interpreter(cx, *looped, std::span<const KernelSpec>(&small, 1), cx.symbol_count(),
                           3, 9);
  // a non-finite output in a loop gives the status of its index, as straight-line code does
  std::vector<double> v(cx.symbol_count(), 0.5), out(small.outputs.size());
  v[sym.size() + 57] = std::numeric_limits<double>::quiet_NaN();  // x57 of `small`
  const int32_t sa = a(v.data(), out.data()), sb = b(v.data(), out.data());
  EXPECT_EQ(sa, sb);
  EXPECT_EQ(sa, 7 * 56 + 1);  // the first output that reads x57: x57 - 0.5 x56 (i = 56)
}

// In a kernel below loop_min_outputs, the outputs of an equation group (KernelSpec::groups: the
// elements of one for-equation or one array of components) of at least loop_min_group outputs
// take loops; outputs of the same shape without a group (the mechanics lowering's) and a group
// below the limit keep straight-line code. The values are those of straight-line code, bit for
// bit.
TEST_F(Codegen, LargeEquationGroupsTakeLoopsInASmallKernel) {
  const int n = 300;
  std::vector<Expr> x;
  for (int i = 0; i < n + 1; ++i) x.push_back(cx.symbol(cx.new_symbol("g" + std::to_string(i))));
  KernelSpec k{"grouped", {}};
  for (int i = 0; i < n; ++i) {  // group 1: n outputs of one shape
    k.outputs.push_back(cx.sub(x[i + 1], cx.mul(cx.num(0.5), x[i])));
    k.groups.push_back(1);
  }
  for (int i = 0; i < 100; ++i) {  // no group, the same shape
    k.outputs.push_back(cx.sub(x[i], cx.mul(cx.num(0.5), x[i + 1])));
    k.groups.push_back(0);
  }
  for (int i = 0; i < 200; ++i) {  // group 2: below the limit
    k.outputs.push_back(cx.unary(Op::Sin, cx.add(x[i], x[i + 1])));
    k.groups.push_back(2);
  }
  ASSERT_LT(k.outputs.size(), JitOptions{}.loop_min_outputs);
  const auto compile = [&](const KernelSpec& spec, size_t min_group, std::string* ir) {
    std::string error;
    JitOptions options;
    options.opt_level = 0;
    options.loop_min_group = min_group;
    auto jit = JitModule::compile(cx, std::span<const KernelSpec>(&spec, 1), options, &error, ir);
    EXPECT_NE(jit, nullptr) << error;
    return jit;
  };
  std::string ir, ir_plain;
  auto looped = compile(k, JitOptions{}.loop_min_group, &ir);
  auto plain = compile(k, SIZE_MAX, &ir_plain);
  ASSERT_TRUE(looped && plain);
  EXPECT_NE(ir.find("@grouped.loop0("), std::string::npos) << "group 1 takes a loop";
  EXPECT_EQ(ir.find("@grouped.loop1("), std::string::npos) << "one loop only";
  // the loop's table of output indices: group 1's n outputs, 4 bytes each (not the 100 of the
  // same shape without a group)
  EXPECT_NE(ir.find("@grouped.loop0.out = private constant [" + std::to_string(4 * n) + " x i8]"),
            std::string::npos);
  EXPECT_EQ(ir_plain.find(".loop"), std::string::npos);
  KernelSpec ungrouped = k;
  ungrouped.groups.clear();
  std::string ir_ungrouped;
  compile(ungrouped, JitOptions{}.loop_min_group, &ir_ungrouped);
  EXPECT_EQ(ir_ungrouped.find(".loop"), std::string::npos) << "no groups, no loops";
  expect_bitwise_equal(looped->lookup("grouped"), plain->lookup("grouped"), cx.symbol_count(),
                       k.outputs.size(), 11);
  compare_with_interpreter(cx, *looped, std::span<const KernelSpec>(&k, 1), cx.symbol_count(), 3,
                           13);
}

TEST_F(Codegen, ASplitKernelAgreesWithTheInterpreter) {
  // random expressions of every op (comparisons, selects, libm calls) sharing subexpressions,
  // in one kernel of more than kChunkNodes inner nodes: values, booleans and shared nodes cross
  // from one part to the next through the kernel's tmp array
  RandomExpr gen(cx, sym, 77);
  KernelSpec big{"big", {}};
  std::vector<Expr> pool(sym.begin(), sym.end());
  while (sym::topological_order(big.outputs).size() < 12000) {
    Expr e = gen(6);
    // reuse earlier outputs, so that later parts read nodes of earlier ones
    e = cx.add(e, cx.mul(cx.num(0.25), pool[pool.size() / 2 + (pool.size() - 1) / 3]));
    pool.push_back(e);
    big.outputs.push_back(e);
  }
  for (int level : {0, 2}) {
    std::string ir;
    auto jit = compile_or_fail(cx, {&big, 1}, level, &ir);
    ASSERT_NE(jit, nullptr);
    EXPECT_NE(ir.find("@big.part2("), std::string::npos);
    const Agreement a = compare_with_interpreter(cx, *jit, {&big, 1}, sym.size(), 6, 5);
    EXPECT_GT(a.identical, a.compared / 2);
  }
}

}  // namespace
}  // namespace mbs::codegen
