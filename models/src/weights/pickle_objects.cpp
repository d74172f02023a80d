// The objects the restricted unpickler builds, and what it lets a pickle name (pickle_objects.hpp).
#include "pickle_objects.hpp"

namespace ordo::pickle {
namespace {

// torch.<name> storage classes a checkpoint may name. Only the float ones become tensors; the
// others (buffers such as BERT's int64 position_ids) are kept as "unsupported dtype" entries.
constexpr StorageType kStorageTypes[] = {
    {"FloatStorage", true, DType::F32, 4},         {"HalfStorage", true, DType::F16, 2},
    {"BFloat16Storage", true, DType::BF16, 2},     {"DoubleStorage", false, DType::F32, 8},
    {"LongStorage", false, DType::F32, 8},         {"IntStorage", false, DType::F32, 4},
    {"ShortStorage", false, DType::F32, 2},        {"CharStorage", false, DType::F32, 1},
    {"ByteStorage", false, DType::F32, 1},         {"BoolStorage", false, DType::F32, 1},
    {"ComplexFloatStorage", false, DType::F32, 8}, {"ComplexDoubleStorage", false, DType::F32, 16},
    {"QInt8Storage", false, DType::F32, 1},        {"QUInt8Storage", false, DType::F32, 1},
    {"QInt32Storage", false, DType::F32, 4},       {"QUInt4x2Storage", false, DType::F32, 1},
    {"QUInt2x4Storage", false, DType::F32, 1},     {"Float8_e4m3fnStorage", false, DType::F32, 1},
    {"Float8_e5m2Storage", false, DType::F32, 1}};

}  // namespace

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::None: return "None";
    case Kind::Bool: return "bool";
    case Kind::Int: return "int";
    case Kind::Float: return "float";
    case Kind::Str: return "str";
    case Kind::Tuple: return "tuple";
    case Kind::List: return "list";
    case Kind::Dict: return "dict";
    case Kind::Global: return "global";
    case Kind::Storage: return "storage";
    case Kind::Tensor: return "tensor";
  }
  return "?";
}

const StorageType* storage_type(const std::string& global) {
  if (global.compare(0, 6, "torch.") != 0) return nullptr;
  for (const StorageType& t : kStorageTypes)
    if (global.compare(6, std::string::npos, t.name) == 0) return &t;
  return nullptr;
}

std::string printable(const std::string& s) {
  std::string out;
  for (char c : s.substr(0, 80)) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f) {
      out += c;
    } else {
      static const char* hex = "0123456789abcdef";
      out += "\\x";
      out += hex[u >> 4];
      out += hex[u & 15];
    }
  }
  if (s.size() > 80) out += "...";
  return out;
}

}  // namespace ordo::pickle
