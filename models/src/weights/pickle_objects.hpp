// The objects the restricted unpickler of torch_pickle.hpp builds, and what it lets a pickle
// name: the allow-listed globals and the torch storage types (private to the weight readers).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "torch_pickle.hpp"

namespace ordo::pickle {

enum class Kind { None, Bool, Int, Float, Str, Tuple, List, Dict, Global, Storage, Tensor };
const char* kind_name(Kind k);

struct Obj;
using Val = std::shared_ptr<Obj>;
struct Obj {
  explicit Obj(Kind k) : kind(k) {}
  Kind kind;
  int64_t i = 0;
  double f = 0;
  std::string s;           // Str; Global: "module.name"
  std::vector<Val> items;  // Tuple, List; Dict: key, value, key, value, ...
  std::shared_ptr<const PickledStorage> storage;
  PickledTensor tensor;
  int depth = 0;
  bool contained = false;  // placed inside another object: frozen from then on
};

struct StorageType {
  const char* name;
  bool supported;
  DType dtype;
  size_t size;
};
// The torch.<name> storage class a GLOBAL names ("torch.FloatStorage"), nullptr for any other.
// Only the float ones become tensors; the others (buffers such as BERT's int64 position_ids) are
// kept as "unsupported dtype" entries.
const StorageType* storage_type(const std::string& global);

// The other globals a state dict uses.
constexpr const char* kOrderedDict = "collections.OrderedDict";
constexpr const char* kRebuildTensor = "torch._utils._rebuild_tensor_v2";
constexpr const char* kRebuildParameter = "torch._utils._rebuild_parameter";
constexpr const char* kRebuildParameterWithState = "torch._utils._rebuild_parameter_with_state";

// A name from the input, printable and short, for messages.
std::string printable(const std::string& s);

}  // namespace ordo::pickle
