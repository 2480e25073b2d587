#include "runtime/model/Shapes.h"

namespace mbs::rt {

const char* shape_type_name(ShapeType t) {
  switch (t) {
    case ShapeType::Box:
      return "box";
    case ShapeType::Cylinder:
      return "cylinder";
    case ShapeType::Sphere:
      return "sphere";
    case ShapeType::Cone:
      return "cone";
    case ShapeType::Pipe:
      return "pipe";
    case ShapeType::Spring:
      return "spring";
  }
  return "?";
}

}  // namespace mbs::rt
