#include "compiler/syntax/Ast.h"

namespace mbs::ast {

const char* class_kind_name(ClassKind k) {
  switch (k) {
    case ClassKind::Model:
      return "model";
    case ClassKind::Connector:
      return "connector";
    case ClassKind::Record:
      return "record";
    case ClassKind::Block:
      return "block";
    case ClassKind::Package:
      return "package";
    case ClassKind::Type:
      return "type";
    case ClassKind::Function:
      return "function";
    case ClassKind::Class:
      return "class";
  }
  return "class";
}

}  // namespace mbs::ast
