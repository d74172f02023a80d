// A PyTorch checkpoint file (torch.save's zip format, as pytorch_model.bin) read into tensors.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>

#include "ordo/tensor.hpp"

namespace ordo {

struct TorchCheckpoint {
  // F32, F16 and BF16 tensors as stored; contiguous ones point into the mapped file (Tensor::owner
  // keeps it mapped), non-contiguous ones are copied contiguous. Names sharing a storage (tied
  // embeddings) share its bytes.
  std::map<std::string, Tensor> tensors;
  // Tensors of other dtypes (int64 position_ids buffers, ...): name -> why ordo cannot use them.
  std::map<std::string, std::string> unsupported;
  // The mapped file the borrowed tensors point into (copied ones are elsewhere).
  std::pair<const unsigned char*, size_t> mapped{nullptr, 0};
  std::shared_ptr<void> mapping;  // keeps `mapped` mapped, also when no tensor borrows from it
};

// Whether `path` is a regular file that starts as a zip archive ("PK") or as torch's pre-1.6
// pickle stream (PROTO 2, then its magic number as a LONG1 of 10 bytes), which
// read_torch_checkpoint names. Never blocks (a FIFO is not a regular file: false). A file that
// reads as safetensors (a header length that fits the file, then '{') is not one, though its
// length's low bytes may spell "PK".
bool is_torch_file(const std::string& path);
bool is_legacy_torch_file(const std::string& path);

// Reads `path`: the zip directory, <archive>/data.pkl through the restricted unpickler, each
// tensor's storage <archive>/data/<key> checked to hold the tensor's shape, strides and offset.
// Errors name the file and the entry, tensor or storage.
TorchCheckpoint read_torch_checkpoint(const std::string& path);

}  // namespace ordo
