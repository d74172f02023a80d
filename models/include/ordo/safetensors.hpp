// Memory-mapped, validated safetensors files. Every header field is checked before any tensor is
// handed out: header length inside the file, JSON well-formed, dtype known, shape product times
// dtype size equal to the byte range, offsets inside the data section, ranges non-overlapping,
// no integer overflow. Every failure throws ordo::Error naming the file and the tensor.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ordo/tensor.hpp"

namespace ordo {

class SafeTensors {
 public:
  // Maps and validates `path`. Supported dtypes: F32, F16, BF16 (and I8 for ordo's own quantized files).
  static SafeTensors open(const std::string& path);

  const std::string& path() const { return path_; }
  bool has(const std::string& name) const { return tensors_.count(name) != 0; }
  // The tensor, borrowing the mapping (it stays mapped while any Tensor refers to it).
  // Throws Error "<file>: missing tensor '<name>'" if absent.
  const Tensor& get(const std::string& name) const;
  std::vector<std::string> names() const;  // sorted
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  std::string path_;
  std::shared_ptr<void> mapping_;
  std::map<std::string, Tensor> tensors_;
  std::map<std::string, std::string> metadata_;
};

// Writes tensors (any supported dtype) to a safetensors file with `metadata`.
void write_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace ordo
