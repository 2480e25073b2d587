// Kernel -> LLVM IR. Each kernel becomes one straight-line function:
//
//   define i32 @name(ptr nocapture readonly %v, ptr nocapture %out)
//     ; every inner DAG node reachable from the outputs, once, in topological order; each
//     ; symbol loaded from v once, where first used; constants as immediates
//     ; each output stored as soon as it is computed
//     ; status: 0, or 1 + index of the first output that is NaN or +-inf (a select chain for
//     ; a few outputs, a loop over out for many)
//
// A kernel with more than kChunkNodes inner nodes is split into internal functions
// `name.part<k>(v, out, tmp)` of at most that many nodes each, called in order by `name`: the
// time of LLVM's optimisation and register allocation grows faster than linearly with the size
// of one function, so bounded functions keep code generation linear in the model's size. A value
// computed in one part and used by a later one is stored in `tmp`, a stack array of `name`
// (at most kMaxCrossing values; a kernel that would need more stays one function). Outputs are
// stored in the part that computes them; the status is the loop over out.
//
// In a kernel with at least JitOptions::loop_min_outputs outputs, the outputs that share a shape
// -- the same operations, with the same constants, on other symbols, as the equations of one
// for-loop or one array of components give -- are computed by a loop instead; in a smaller
// kernel, those of the equation groups (KernelSpec::groups: the structure the flattener records)
// with at least JitOptions::loop_min_group outputs. A loop is an internal
// function `name.loop<g>(v, out)` whose body is the shape once, its leaves loaded through a
// constant table of symbol slots, its result stored through a table of output indices. Only
// outputs whose own DAG has at most kTemplateMaxNodes nodes take part (a shared subexpression is
// computed again by each), and only shapes of at least kLoopMinInstances outputs. Code
// generation then grows with the number of shapes instead of outputs. Each loop computes its
// outputs with the same operations in the same order as the straight-line code, so the results
// are identical.
//
// The IR implements exactly the semantics of the interpreter (sym::evaluate): sums and products
// combine their operands left to right in stored order, no fast-math flags are set (so LLVM
// cannot reassociate or contract into fma: results are reproducible against the interpreter),
// comparisons are ordered except <> (NaN <> x is true), and truth tests are `!= 0` (NaN is
// true). The deliberate deviations: x^n for integer |n| <= 4 is computed by multiplication
// (within a few ulp of pow, and different from pow for results at the edge of overflow or
// underflow), and x^0.5 as sqrt(x) (differs from pow at -0 and -inf). Other powers call pow.
#include "compiler/codegen/LowerToLlvm.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/GlobalVariable.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/Module.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "compiler/symbolic/ExprInternal.h"

namespace mbs::codegen {

using sym::Expr;
using sym::Op;

namespace {

bool is_identifier(const std::string& s) {
  if (s.empty()) return false;
  auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  if (!alpha(s[0])) return false;
  for (char c : s) {
    if (!alpha(c) && !(c >= '0' && c <= '9')) return false;
  }
  return true;
}

// C library functions the generated code may call (directly, or through LLVM lowering of an
// intrinsic); a kernel with one of these names would clash with the declaration.
bool is_reserved(const std::string& s) {
  static const std::set<std::string> names = {
      "sin",  "cos",  "tan",    "asin",   "acos",   "atan",    "atan2", "sinh",
      "cosh", "tanh", "exp",    "exp2",   "log",    "log2",    "log10", "sqrt",
      "fabs", "pow",  "sincos", "memcpy", "memset", "memmove", "fmin",  "fmax"};
  return names.contains(s);
}

// The C library function for ops without an LLVM intrinsic.
const char* libm_name(Op op) {
  switch (op) {
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
    default:
      return nullptr;
  }
}

llvm::Intrinsic::ID intrinsic_of(Op op) {
  switch (op) {
    case Op::Sin:
      return llvm::Intrinsic::sin;
    case Op::Cos:
      return llvm::Intrinsic::cos;
    case Op::Exp:
      return llvm::Intrinsic::exp;
    case Op::Log:
      return llvm::Intrinsic::log;
    case Op::Log10:
      return llvm::Intrinsic::log10;
    case Op::Sqrt:
      return llvm::Intrinsic::sqrt;
    case Op::Abs:
      return llvm::Intrinsic::fabs;
    case Op::Floor:
      return llvm::Intrinsic::floor;
    default:
      return llvm::Intrinsic::not_intrinsic;
  }
}

bool is_boolean(Op op) {
  switch (op) {
    case Op::Lt:
    case Op::Le:
    case Op::Gt:
    case Op::Ge:
    case Op::Eq:
    case Op::Ne:
    case Op::And:
    case Op::Or:
    case Op::Not:
      return true;
    default:
      return false;
  }
}

// Kernels with at most this many outputs compute their status by a select chain.
constexpr uint64_t kStatusChainMax = 32;
// Inner nodes per function of a split kernel (see the file comment), and the most values that
// may cross from one part to a later one (the stack array of the kernel: 512 KiB).
constexpr size_t kChunkNodes = 4096;
constexpr size_t kMaxCrossing = 65536;
// Loops over repeated outputs (see the file comment): an output whose own DAG has at most
// kTemplateMaxNodes nodes; a shape shared by at least kLoopMinInstances outputs.
constexpr size_t kTemplateMaxNodes = 64;
constexpr size_t kLoopMinInstances = 32;

// Outputs of one shape: the same operations on different symbols and constants. `outputs` are
// indices into the kernel's outputs, `symbols` and `constants` their leaves (n_symbols and
// n_constants per output, in the template's order).
struct LoopGroup {
  std::vector<size_t> outputs;
  std::vector<uint32_t> symbols;
  std::vector<double> constants;
  size_t n_symbols = 0, n_constants = 0;
  std::vector<Expr> order;  // the first output's DAG, topological: the template
};

// The output's own DAG in topological order, or empty when it has more than kTemplateMaxNodes
// nodes; `shape` gets a text that is equal for two outputs exactly when the same operations apply
// to their leaves: per node its op and its arguments' local numbers; a symbol's leaf number; a
// constant's leaf number, or its value where the lowering reads the value (the exponent of a
// power: x^2 is x*x). `symbols` and `constants` get the leaves' values in template order.
std::vector<Expr> output_shape(Expr root, std::string& shape, std::vector<uint32_t>& symbols,
                               std::vector<double>& constants) {
  shape.clear();
  symbols.clear();
  constants.clear();
  std::vector<Expr> order;
  sym::detail::NodeMap<uint32_t> local(32);
  std::vector<std::pair<Expr, uint32_t>> stack{{root, 0}};
  while (!stack.empty()) {  // iterative post-order
    auto& [n, next] = stack.back();
    if (local.find(n) != nullptr) {
      stack.pop_back();
      continue;
    }
    if (next < n->nargs) {
      Expr a = n->args()[next++];
      if (local.find(a) == nullptr) stack.push_back({a, 0});
      continue;
    }
    const Expr done = n;
    stack.pop_back();
    if (local.find(done) != nullptr) continue;
    local.insert(done, static_cast<uint32_t>(order.size()));
    order.push_back(done);
    if (order.size() > kTemplateMaxNodes) return {};
  }
  std::vector<char> fixed(order.size(), 0);
  for (Expr n : order)
    if (n->op == Op::Pow && n->args()[1]->is_const()) fixed[*local.find(n->args()[1])] = 1;
  for (size_t k = 0; k < order.size(); ++k) {
    const Expr n = order[k];
    shape += std::to_string(static_cast<int>(n->op));
    if (n->is_symbol()) {
      shape += "s";
      symbols.push_back(n->symbol);
    } else if (n->is_const() && fixed[k]) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "c%a", n->value);
      shape += buf;
    } else if (n->is_const()) {
      shape += "c";
      constants.push_back(n->value);
    } else {
      for (uint32_t i = 0; i < n->nargs; ++i)
        shape += "," + std::to_string(*local.find(n->args()[i]));
    }
    shape += ";";
  }
  return order;
}

class KernelLowering {
 public:
  KernelLowering(const sym::Context& cx, llvm::Module& m, size_t loop_min_outputs,
                 size_t loop_min_group)
      : cx_(cx),
        m_(m),
        b_(m.getContext()),
        f64_(b_.getDoubleTy()),
        loop_min_outputs_(loop_min_outputs),
        loop_min_group_(loop_min_group) {}

  void lower(const KernelSpec& k) {
    // outputs of a repeated shape are computed by loops, the others by straight-line code
    std::vector<LoopGroup> groups = loop_groups(k);
    std::vector<char> in_loop(k.outputs.size(), 0);
    for (const LoopGroup& g : groups)
      for (size_t i : g.outputs) in_loop[i] = 1;
    std::vector<Expr> rest;
    for (size_t i = 0; i < k.outputs.size(); ++i)
      if (!in_loop[i]) rest.push_back(k.outputs[i]);
    std::vector<Expr> order = sym::topological_order(rest);
    // each output is stored as soon as its node is computed, so no value stays live to the end
    // of the function (register pressure, and with it code generation time, stays bounded)
    std::unordered_map<Expr, std::vector<size_t>> outputs_of;
    for (size_t i = 0; i < k.outputs.size(); ++i)
      if (!in_loop[i]) outputs_of[k.outputs[i]].push_back(i);
    auto store = [&](Expr n) {
      auto it = outputs_of.find(n);
      if (it == outputs_of.end()) return;
      llvm::Value* x = value(n);
      for (size_t i : it->second) b_.CreateStore(x, b_.CreateConstInBoundsGEP1_64(f64_, out_, i));
    };
    llvm::Function* fn = declare_kernel(k.name);
    std::vector<llvm::Function*> loops;
    for (size_t g = 0; g < groups.size(); ++g) loops.push_back(lower_loop(k, groups[g], g));
    bool split = lower_split(k, order, fn, store);
    if (!split) {
      begin_body(fn);
      for (Expr n : order) {
        if (n->nargs > 0) emit(n);
        store(n);
      }
    }
    for (llvm::Function* loop : loops) b_.CreateCall(loop, {v_, out_});
    split |= !loops.empty();  // the status: the loop over out
    // Status: the first output that is NaN or +-inf. A few outputs: a select chain over their
    // values (straight-line code, cheapest to compile and run); many, or a split kernel: a loop
    // over what was stored (a chain would keep every value live to the end of the function).
    const uint64_t count = k.outputs.size();
    if (count == 0) {
      b_.CreateRet(b_.getInt32(0));
      return;
    }
    if (count <= kStatusChainMax && !split) {
      llvm::Value* status = b_.getInt32(0);
      auto* inf = llvm::ConstantFP::getInfinity(f64_);
      for (size_t i = count; i-- > 0;) {
        llvm::Value* mag = b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, value(k.outputs[i]));
        llvm::Value* bad = b_.CreateFCmpUEQ(mag, inf, "nonfinite");  // NaN or +-inf
        status = b_.CreateSelect(bad, b_.getInt32(static_cast<uint32_t>(i + 1)), status);
      }
      b_.CreateRet(status);
      return;
    }
    llvm::LLVMContext& c = m_.getContext();
    llvm::BasicBlock* entry = b_.GetInsertBlock();
    auto* loop = llvm::BasicBlock::Create(c, "check", fn);
    auto* next = llvm::BasicBlock::Create(c, "next", fn);
    auto* bad = llvm::BasicBlock::Create(c, "nonfinite", fn);
    auto* done = llvm::BasicBlock::Create(c, "finite", fn);
    b_.CreateBr(loop);
    b_.SetInsertPoint(loop);
    llvm::PHINode* i = b_.CreatePHI(b_.getInt64Ty(), 2, "i");
    i->addIncoming(b_.getInt64(0), entry);
    llvm::Value* x = b_.CreateLoad(f64_, b_.CreateInBoundsGEP(f64_, out_, i));
    llvm::Value* mag = b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
    auto* inf = llvm::ConstantFP::getInfinity(f64_);
    b_.CreateCondBr(b_.CreateFCmpUEQ(mag, inf, "is_nonfinite"), bad, next);
    b_.SetInsertPoint(next);
    llvm::Value* i1 = b_.CreateAdd(i, b_.getInt64(1));
    i->addIncoming(i1, next);
    b_.CreateCondBr(b_.CreateICmpULT(i1, b_.getInt64(count)), loop, done);
    b_.SetInsertPoint(bad);
    b_.CreateRet(b_.CreateTrunc(b_.CreateAdd(i, b_.getInt64(1)), b_.getInt32Ty()));
    b_.SetInsertPoint(done);
    b_.CreateRet(b_.getInt32(0));
  }

 private:
  // The parts of a kernel with more than kChunkNodes inner nodes (see the file comment): emits
  // them and, into fn's entry block, the calls; returns false (nothing emitted) for a kernel
  // that stays one function. Leaves the builder at the end of fn's entry block.
  template <class Store>
  bool lower_split(const KernelSpec& k, const std::vector<Expr>& order, llvm::Function* fn,
                   Store& store) {
    size_t inner = 0;
    for (Expr n : order) inner += n->nargs > 0 ? 1 : 0;
    if (inner <= kChunkNodes) return false;
    // parts: consecutive runs of the topological order with kChunkNodes inner nodes each
    sym::detail::NodeMap<uint32_t> part_of(order.size());
    std::vector<size_t> part_begin{0};
    size_t in_part = 0;
    for (size_t i = 0; i < order.size(); ++i) {
      if (order[i]->nargs > 0 && in_part == kChunkNodes) {
        part_begin.push_back(i);
        in_part = 0;
      }
      in_part += order[i]->nargs > 0 ? 1 : 0;
      part_of.insert(order[i], static_cast<uint32_t>(part_begin.size() - 1));
    }
    part_begin.push_back(order.size());
    // the inner nodes a later part reads: a slot of tmp each
    sym::detail::NodeMap<uint32_t> slot;
    uint32_t n_slots = 0;
    for (Expr n : order)
      for (uint32_t a = 0; a < n->nargs; ++a) {
        Expr arg = n->args()[a];
        if (arg->nargs == 0 || *part_of.find(arg) == *part_of.find(n)) continue;
        if (slot.insert(arg, n_slots).second) ++n_slots;
      }
    if (n_slots > kMaxCrossing) return false;
    auto* ptr = llvm::PointerType::getUnqual(m_.getContext());
    auto* part_type = llvm::FunctionType::get(b_.getVoidTy(), {ptr, ptr, ptr}, false);
    std::vector<llvm::Function*> parts;
    for (size_t p = 0; p + 1 < part_begin.size(); ++p) {
      auto* part = llvm::Function::Create(part_type, llvm::Function::InternalLinkage,
                                          k.name + ".part" + std::to_string(p), m_);
      part->addFnAttr(llvm::Attribute::NoInline);  // the point is bounded functions
      part->addFnAttr(llvm::Attribute::NoUnwind);
      part->addFnAttr(llvm::Attribute::WillReturn);
      for (unsigned i = 0; i < 3; ++i) {
        part->addParamAttr(i, llvm::Attribute::NoCapture);
        part->addParamAttr(i, llvm::Attribute::NoUndef);
      }
      part->addParamAttr(0, llvm::Attribute::ReadOnly);
      begin_body(part);
      tmp_ = part->getArg(2);
      tmp_->setName("tmp");
      tmp_slot_ = &slot;
      for (size_t i = part_begin[p]; i < part_begin[p + 1]; ++i) {
        Expr n = order[i];
        if (n->nargs > 0) emit(n);
        store(n);
        if (const uint32_t* s = slot.find(n))
          b_.CreateStore(value(n), b_.CreateConstInBoundsGEP1_64(f64_, tmp_, *s));
      }
      b_.CreateRetVoid();
      parts.push_back(part);
    }
    tmp_ = nullptr;
    tmp_slot_ = nullptr;
    begin_body(fn);
    llvm::Value* tmp = b_.CreateAlloca(f64_, b_.getInt64(std::max<uint32_t>(n_slots, 1)), "tmp");
    for (llvm::Function* part : parts) b_.CreateCall(part, {v_, out_, tmp});
    return true;
  }

  // The shapes of the kernel's outputs shared by at least kLoopMinInstances outputs, in the order
  // of their first output: of all outputs in a kernel of at least loop_min_outputs_, else of
  // those of equation groups with at least loop_min_group_ outputs in the kernel.
  std::vector<LoopGroup> loop_groups(const KernelSpec& k) {
    std::vector<LoopGroup> groups;
    std::vector<char> candidate;  // per output, when not all are
    if (k.outputs.size() < loop_min_outputs_) {
      if (k.groups.size() != k.outputs.size() || k.outputs.size() < loop_min_group_) return groups;
      std::unordered_map<uint32_t, size_t> size;
      for (uint32_t g : k.groups)
        if (g != 0) ++size[g];
      candidate.assign(k.outputs.size(), 0);
      bool any = false;
      for (size_t i = 0; i < k.outputs.size(); ++i)
        if (k.groups[i] != 0 && size[k.groups[i]] >= loop_min_group_) {
          candidate[i] = 1;
          any = true;
        }
      if (!any) return groups;
    }
    std::unordered_map<std::string, size_t> group_of;
    std::vector<LoopGroup> all;
    std::string shape;
    std::vector<uint32_t> symbols;
    std::vector<double> constants;
    for (size_t i = 0; i < k.outputs.size(); ++i) {
      if (!candidate.empty() && !candidate[i]) continue;
      std::vector<Expr> order = output_shape(k.outputs[i], shape, symbols, constants);
      if (order.empty()) continue;
      auto [it, fresh] = group_of.try_emplace(shape, all.size());
      if (fresh) {
        all.emplace_back();
        all.back().n_symbols = symbols.size();
        all.back().n_constants = constants.size();
        all.back().order = std::move(order);
      }
      LoopGroup& g = all[it->second];
      g.outputs.push_back(i);
      g.symbols.insert(g.symbols.end(), symbols.begin(), symbols.end());
      g.constants.insert(g.constants.end(), constants.begin(), constants.end());
    }
    for (LoopGroup& g : all)
      if (g.outputs.size() >= kLoopMinInstances) groups.push_back(std::move(g));
    return groups;
  }

  // void name.loop<g>(v, out): for each output of the group, load its leaves through the group's
  // table of symbols, compute the template, store to out through the table of output indices.
  llvm::Function* lower_loop(const KernelSpec& k, const LoopGroup& g, size_t index) {
    llvm::LLVMContext& c = m_.getContext();
    auto* ptr = llvm::PointerType::getUnqual(c);
    auto* type = llvm::FunctionType::get(b_.getVoidTy(), {ptr, ptr}, false);
    const std::string name = k.name + ".loop" + std::to_string(index);
    auto* fn = llvm::Function::Create(type, llvm::Function::InternalLinkage, name, m_);
    fn->addFnAttr(llvm::Attribute::NoInline);
    fn->addFnAttr(llvm::Attribute::NoUnwind);
    fn->addFnAttr(llvm::Attribute::WillReturn);
    for (unsigned i = 0; i < 2; ++i) {
      fn->addParamAttr(i, llvm::Attribute::NoCapture);
      fn->addParamAttr(i, llvm::Attribute::NoUndef);
    }
    fn->addParamAttr(0, llvm::Attribute::ReadOnly);
    // The tables are arrays of bytes (the values' bytes in the host's order, read back as i32 or
    // double): the object writer emits a byte array in one piece, an array of i32 or double
    // element by element, each in a fragment of its own (about 150 bytes of the writer's memory
    // per element: 125 MB for the tables of the 10^5-equation chain).
    const auto table = [&](const void* values, size_t count, size_t size, const char* what) {
      llvm::Constant* data = llvm::ConstantDataArray::get(
          c, llvm::ArrayRef<uint8_t>(static_cast<const uint8_t*>(values), count * size));
      auto* global = new llvm::GlobalVariable(
          m_, data->getType(), true, llvm::GlobalValue::PrivateLinkage, data, name + "." + what);
      global->setAlignment(llvm::Align(size));
      return global;
    };
    std::vector<uint32_t> out_index(g.outputs.begin(), g.outputs.end());
    llvm::GlobalVariable* outs = table(out_index.data(), out_index.size(), sizeof(uint32_t), "out");
    llvm::GlobalVariable* syms =
        g.n_symbols > 0 ? table(g.symbols.data(), g.symbols.size(), sizeof(uint32_t), "symbols")
                        : nullptr;
    llvm::GlobalVariable* consts = g.n_constants > 0 ? table(g.constants.data(), g.constants.size(),
                                                             sizeof(double), "constants")
                                                     : nullptr;
    begin_body(fn);
    llvm::BasicBlock* entry = b_.GetInsertBlock();
    auto* body = llvm::BasicBlock::Create(c, "body", fn);
    auto* done = llvm::BasicBlock::Create(c, "done", fn);
    b_.CreateBr(body);
    b_.SetInsertPoint(body);
    llvm::PHINode* i = b_.CreatePHI(b_.getInt64Ty(), 2, "i");
    i->addIncoming(b_.getInt64(0), entry);
    // the template's leaves, loaded through the table, then its inner nodes
    values_ = sym::detail::NodeMap<llvm::Value*>();
    truths_ = sym::detail::NodeMap<llvm::Value*>();
    size_t symbol = 0, constant = 0;
    llvm::Value* base = g.n_symbols > 0 ? b_.CreateMul(i, b_.getInt64(g.n_symbols)) : nullptr;
    llvm::Value* cbase = g.n_constants > 0 ? b_.CreateMul(i, b_.getInt64(g.n_constants)) : nullptr;
    std::vector<char> is_exponent(g.order.size(), 0);  // constants the shape fixes
    for (Expr n : g.order)
      if (n->op == Op::Pow && n->args()[1]->is_const())
        for (size_t j = 0; j < g.order.size(); ++j)
          if (g.order[j] == n->args()[1]) is_exponent[j] = 1;
    for (size_t j = 0; j < g.order.size(); ++j) {
      const Expr n = g.order[j];
      if (n->is_symbol()) {
        llvm::Value* at = b_.CreateAdd(base, b_.getInt64(symbol++));
        llvm::Value* slot =
            b_.CreateLoad(b_.getInt32Ty(), b_.CreateInBoundsGEP(b_.getInt32Ty(), syms, at));
        llvm::Value* p = b_.CreateInBoundsGEP(f64_, v_, b_.CreateZExt(slot, b_.getInt64Ty()));
        values_.insert(n, b_.CreateLoad(f64_, p));
      } else if (n->is_const() && !is_exponent[j]) {
        llvm::Value* at = b_.CreateAdd(cbase, b_.getInt64(constant++));
        values_.insert(n, b_.CreateLoad(f64_, b_.CreateInBoundsGEP(f64_, consts, at)));
      }
    }
    for (Expr n : g.order)
      if (n->nargs > 0) emit(n);
    llvm::Value* o = b_.CreateLoad(b_.getInt32Ty(), b_.CreateInBoundsGEP(b_.getInt32Ty(), outs, i));
    b_.CreateStore(value(g.order.back()),
                   b_.CreateInBoundsGEP(f64_, out_, b_.CreateZExt(o, b_.getInt64Ty())));
    llvm::Value* i1 = b_.CreateAdd(i, b_.getInt64(1));
    i->addIncoming(i1, b_.GetInsertBlock());
    b_.CreateCondBr(b_.CreateICmpULT(i1, b_.getInt64(g.outputs.size())), body, done);
    b_.SetInsertPoint(done);
    b_.CreateRetVoid();
    return fn;
  }

  // i32 name(ptr nocapture readonly v, ptr nocapture out), external.
  llvm::Function* declare_kernel(const std::string& name) {
    auto* ptr = llvm::PointerType::getUnqual(m_.getContext());
    auto* type = llvm::FunctionType::get(b_.getInt32Ty(), {ptr, ptr}, false);
    auto* fn = llvm::Function::Create(type, llvm::Function::ExternalLinkage, name, m_);
    fn->addFnAttr(llvm::Attribute::NoUnwind);
    fn->addFnAttr(llvm::Attribute::WillReturn);
    fn->addFnAttr(llvm::Attribute::NoFree);
    fn->addFnAttr(llvm::Attribute::NoSync);
    for (unsigned i = 0; i < 2; ++i) {
      fn->addParamAttr(i, llvm::Attribute::NoCapture);
      fn->addParamAttr(i, llvm::Attribute::NoUndef);
    }
    fn->addParamAttr(0, llvm::Attribute::ReadOnly);  // out is written, then read by the check
    return fn;
  }

  // Starts emitting into fn's entry block with empty memo tables.
  void begin_body(llvm::Function* fn) {
    v_ = fn->getArg(0);
    out_ = fn->getArg(1);
    v_->setName("v");
    out_->setName("out");
    b_.SetInsertPoint(llvm::BasicBlock::Create(m_.getContext(), "entry", fn));
    values_ = sym::detail::NodeMap<llvm::Value*>();
    truths_ = sym::detail::NodeMap<llvm::Value*>();
  }

  // The double value of a node. Leaves are made on first use (constants; symbols are loaded from
  // v once per kernel), booleans are converted to 0.0/1.0 on first use.
  llvm::Value* value(Expr n) {
    if (llvm::Value** v = values_.find(n)) return *v;
    llvm::Value* d = nullptr;
    if (llvm::Value** t = truths_.find(n)) {
      d = b_.CreateUIToFP(*t, f64_);
    } else if (n->is_const()) {
      d = constant(n->value);
    } else if (const uint32_t* s = tmp_slot_ ? tmp_slot_->find(n) : nullptr) {
      d = b_.CreateLoad(f64_, b_.CreateConstInBoundsGEP1_64(f64_, tmp_, *s));  // an earlier part's
    } else if (n->is_symbol()) {
      llvm::Value* p = b_.CreateConstInBoundsGEP1_64(f64_, v_, n->symbol);
      bool named = !m_.getContext().shouldDiscardValueNames() && n->symbol < cx_.symbol_count();
      d = b_.CreateLoad(f64_, p, named ? cx_.symbol_name(n->symbol) : "");
    } else {
      sym::detail::internal_error("codegen: node used before it was emitted");
    }
    values_.insert(n, d);
    return d;
  }

  // The truth (i1) of a node: its value != 0 (NaN is true).
  llvm::Value* truth(Expr n) {
    if (llvm::Value** t = truths_.find(n)) return *t;
    llvm::Value* t = b_.CreateFCmpUNE(value(n), llvm::ConstantFP::get(f64_, 0.0));
    truths_.insert(n, t);
    return t;
  }

  llvm::Value* constant(double x) { return llvm::ConstantFP::get(f64_, x); }

  llvm::FunctionCallee libm(const char* name, unsigned arity) {
    std::vector<llvm::Type*> params(arity, f64_);
    auto* type = llvm::FunctionType::get(f64_, params, false);
    llvm::FunctionCallee callee = m_.getOrInsertFunction(name, type);
    if (auto* f = llvm::dyn_cast<llvm::Function>(callee.getCallee())) {
      // As clang with -fno-math-errno: a pure function of its arguments.
      f->setDoesNotThrow();
      f->setDoesNotAccessMemory();
      f->setWillReturn();
    }
    return callee;
  }

  llvm::Value* integer_power(llvm::Value* x, int n) {
    int k = n < 0 ? -n : n;
    llvm::Value* p = nullptr;
    switch (k) {
      case 0:
        p = constant(1.0);
        break;
      case 1:
        p = x;
        break;
      case 2:
        p = b_.CreateFMul(x, x);
        break;
      case 3:
        p = b_.CreateFMul(b_.CreateFMul(x, x), x);
        break;
      default: {
        llvm::Value* x2 = b_.CreateFMul(x, x);
        p = b_.CreateFMul(x2, x2);
      }
    }
    return n < 0 ? b_.CreateFDiv(constant(1.0), p) : p;
  }

  void emit(Expr n) {
    if (is_boolean(n->op)) {
      truths_.insert(n, emit_boolean(n));
    } else {
      values_.insert(n, emit_value(n));
    }
  }

  llvm::Value* emit_boolean(Expr n) {
    switch (n->op) {
      case Op::Lt:
        return b_.CreateFCmpOLT(value(n->args()[0]), value(n->args()[1]));
      case Op::Le:
        return b_.CreateFCmpOLE(value(n->args()[0]), value(n->args()[1]));
      case Op::Gt:
        return b_.CreateFCmpOGT(value(n->args()[0]), value(n->args()[1]));
      case Op::Ge:
        return b_.CreateFCmpOGE(value(n->args()[0]), value(n->args()[1]));
      case Op::Eq:
        return b_.CreateFCmpOEQ(value(n->args()[0]), value(n->args()[1]));
      case Op::Ne:
        return b_.CreateFCmpUNE(value(n->args()[0]), value(n->args()[1]));
      case Op::And:
        return b_.CreateAnd(truth(n->args()[0]), truth(n->args()[1]));
      case Op::Or:
        return b_.CreateOr(truth(n->args()[0]), truth(n->args()[1]));
      case Op::Not:
        return b_.CreateNot(truth(n->args()[0]));
      default:
        sym::detail::internal_error("codegen: not a boolean op");
    }
  }

  llvm::Value* emit_value(Expr n) {
    auto arg = [&](uint32_t i) { return value(n->args()[i]); };
    switch (n->op) {
      case Op::Add: {
        llvm::Value* s = arg(0);
        for (uint32_t i = 1; i < n->nargs; ++i) s = b_.CreateFAdd(s, arg(i));
        return s;
      }
      case Op::Mul: {
        llvm::Value* p = arg(0);
        for (uint32_t i = 1; i < n->nargs; ++i) p = b_.CreateFMul(p, arg(i));
        return p;
      }
      case Op::Pow: {
        Expr e = n->args()[1];
        if (e->is_const()) {
          double k = e->value;
          if (sym::detail::is_integer(k) && std::fabs(k) <= 4) {
            return integer_power(arg(0), static_cast<int>(k));
          }
          if (k == 0.5) return b_.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, arg(0));
        }
        return b_.CreateBinaryIntrinsic(llvm::Intrinsic::pow, arg(0), arg(1));
      }
      case Op::Sign: {
        llvm::Value* x = arg(0);
        llvm::Value* zero = constant(0.0);
        llvm::Value* neg = b_.CreateSelect(b_.CreateFCmpOLT(x, zero), constant(-1.0), x);
        return b_.CreateSelect(b_.CreateFCmpOGT(x, zero), constant(1.0), neg);
      }
      case Op::Min:
        return b_.CreateSelect(b_.CreateFCmpOLT(arg(0), arg(1)), arg(0), arg(1));
      case Op::Max:
        return b_.CreateSelect(b_.CreateFCmpOGT(arg(0), arg(1)), arg(0), arg(1));
      case Op::Select:
        return b_.CreateSelect(truth(n->args()[0]), arg(1), arg(2));
      case Op::Cancelled: {  // 1 where x is finite and non-zero, else NaN
        llvm::Value* x = arg(0);
        llvm::Value* mag = b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
        llvm::Value* ok = b_.CreateAnd(b_.CreateFCmpONE(x, constant(0.0)),
                                       b_.CreateFCmpONE(mag, constant(HUGE_VAL)));
        return b_.CreateSelect(ok, constant(1.0),
                               constant(std::numeric_limits<double>::quiet_NaN()));
      }
      default:
        break;
    }
    if (llvm::Intrinsic::ID id = intrinsic_of(n->op); id != llvm::Intrinsic::not_intrinsic) {
      return b_.CreateUnaryIntrinsic(id, arg(0));
    }
    if (const char* name = libm_name(n->op)) {
      if (n->nargs == 1) return b_.CreateCall(libm(name, 1), {arg(0)});
      return b_.CreateCall(libm(name, 2), {arg(0), arg(1)});
    }
    sym::detail::internal_error("codegen: cannot lower " + std::string(sym::op_name(n->op)));
  }

  const sym::Context& cx_;
  llvm::Module& m_;
  llvm::IRBuilder<> b_;
  llvm::Type* f64_;
  llvm::Value* v_ = nullptr;
  llvm::Value* out_ = nullptr;
  llvm::Value* tmp_ = nullptr;                                // a part's tmp argument
  const sym::detail::NodeMap<uint32_t>* tmp_slot_ = nullptr;  // nodes kept in tmp
  sym::detail::NodeMap<llvm::Value*> values_;
  sym::detail::NodeMap<llvm::Value*> truths_;
  size_t loop_min_outputs_;
  size_t loop_min_group_;
};

}  // namespace

std::string check_kernel_names(KernelRefs kernels) {
  std::set<std::string> names;
  for (const KernelSpec* kp : kernels) {
    const KernelSpec& k = *kp;
    if (!is_identifier(k.name)) return "kernel name '" + k.name + "' is not a C identifier";
    if (is_reserved(k.name)) {
      return "kernel name '" + k.name + "' is reserved (a C math library function)";
    }
    if (!names.insert(k.name).second) return "kernel name '" + k.name + "' is used twice";
  }
  return {};
}

std::string lower_kernels(const sym::Context& cx, KernelRefs kernels, llvm::Module& module,
                          size_t loop_min_outputs, size_t loop_min_group) {
  if (std::string e = check_kernel_names(kernels); !e.empty()) return e;
  KernelLowering lowering(cx, module, loop_min_outputs, loop_min_group);
  for (const KernelSpec* k : kernels) lowering.lower(*k);
  return {};
}

std::string lower_kernels(const sym::Context& cx, std::span<const KernelSpec> kernels,
                          llvm::Module& module, size_t loop_min_outputs, size_t loop_min_group) {
  return lower_kernels(cx, kernel_refs(kernels), module, loop_min_outputs, loop_min_group);
}

}  // namespace mbs::codegen
