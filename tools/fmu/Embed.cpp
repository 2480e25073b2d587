// The embedding object of an exported FMU (Embed.h), made with LLVM: a module of constants,
// compiled for the same target as the kernels (codegen::emit_object).
#include "tools/fmu/Embed.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/GlobalVariable.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>

#include "compiler/codegen/Jit.h"

namespace mbs::fmu {

namespace {

llvm::GlobalVariable* constant(llvm::Module& m, const char* name, llvm::Constant* value) {
  return new llvm::GlobalVariable(m, value->getType(), /*isConstant=*/true,
                                  llvm::GlobalValue::ExternalLinkage, value, name);
}

}  // namespace

std::string embedding_object(const std::string& model_image, const std::string& config,
                             const std::vector<std::string>& kernel_symbols, const std::string& cpu,
                             std::string* error) {
  std::string ignored;
  std::string& err = error != nullptr ? *error : ignored;
  llvm::LLVMContext ctx;
  llvm::Module m("mbs_fmu_embedding", ctx);
  auto* i64 = llvm::Type::getInt64Ty(ctx);
  auto* ptr = llvm::PointerType::get(ctx, 0);

  constant(m, "mbs_fmu_model_image",
           llvm::ConstantDataArray::getString(ctx, model_image, /*AddNull=*/false));
  constant(m, "mbs_fmu_model_image_size", llvm::ConstantInt::get(i64, model_image.size()));
  constant(m, "mbs_fmu_config", llvm::ConstantDataArray::getString(ctx, config, /*AddNull=*/true));

  auto* kernel_type = llvm::FunctionType::get(llvm::Type::getInt32Ty(ctx), {ptr, ptr}, false);
  auto* entry_type = llvm::StructType::get(ctx, {ptr, ptr});
  std::vector<llvm::Constant*> entries;
  for (const std::string& symbol : kernel_symbols) {
    auto* name = new llvm::GlobalVariable(
        m, llvm::ArrayType::get(llvm::Type::getInt8Ty(ctx), symbol.size() + 1), true,
        llvm::GlobalValue::PrivateLinkage, llvm::ConstantDataArray::getString(ctx, symbol, true),
        ".name");
    llvm::FunctionCallee fn = m.getOrInsertFunction(symbol, kernel_type);
    entries.push_back(
        llvm::ConstantStruct::get(entry_type, {name, llvm::cast<llvm::Constant>(fn.getCallee())}));
  }
  constant(m, "mbs_fmu_kernels",
           llvm::ConstantArray::get(llvm::ArrayType::get(entry_type, entries.size()), entries));
  constant(m, "mbs_fmu_kernel_count", llvm::ConstantInt::get(i64, entries.size()));

  std::string problems;
  llvm::raw_string_ostream os(problems);
  if (llvm::verifyModule(m, &os)) {
    os.flush();
    err = "internal error: the embedding module does not verify: " + problems;
    return {};
  }
  // the kernels' target (codegen::JitOptions::cpu, checked there)
  return codegen::emit_object(m, cpu, &err);
}

}  // namespace mbs::fmu
