// A restricted unpickler for the data.pkl of a PyTorch checkpoint: it interprets the pickle
// opcodes torch.save writes (protocols 2 to 4) and builds a name -> tensor-description map, and
// nothing else. It calls no Python and imports nothing: a GLOBAL other than the few a state dict
// uses (collections.OrderedDict, torch._utils._rebuild_tensor_v2 / _rebuild_parameter, the
// torch.*Storage types) is refused on sight with an Error naming it, so a pickle that would run
// os.system when loaded by Python is an error here. Memory and nesting are bounded by the input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ordo/tensor.hpp"

namespace ordo {

// A persistent id ('storage', torch.<T>Storage, key, location, numel).
struct PickledStorage {
  std::string type;          // "FloatStorage", "LongStorage", ...
  bool supported = false;    // F32, F16 or BF16
  DType dtype = DType::F32;  // when supported
  size_t element_size = 1;
  std::string key;  // the zip entry <archive>/data/<key>
  int64_t numel = 0;
};

// torch._utils._rebuild_tensor_v2(storage, storage_offset, size, stride, ...).
struct PickledTensor {
  std::shared_ptr<const PickledStorage> storage;
  int64_t offset = 0;
  std::vector<int64_t> shape, stride;
};

// The state dict pickled in `data` (a dict or OrderedDict of name -> tensor), in pickle order.
// Errors start with `origin` (the file and entry) and name the opcode, global, key or field.
std::vector<std::pair<std::string, PickledTensor>> unpickle_state_dict(const unsigned char* data, size_t size,
                                                                       const std::string& origin);

}  // namespace ordo
