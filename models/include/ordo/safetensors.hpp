// Memory-mapped, validated safetensors files. Every header field is checked before any tensor is
// handed out: header length inside the file, JSON well-formed, dtype known, shape product times
// dtype size equal to the byte range, offsets inside the data section, ranges non-overlapping,
// no integer overflow. Every failure throws ordo::Error naming the file and the tensor.
//
// Mapped tensors are read-only (PROT_READ, MAP_PRIVATE): Tensor::data is a plain pointer into the
// mapping and must not be written through. It is NOT necessarily aligned for its dtype (the format
// only guarantees byte offsets); code that needs aligned or converted data copies it first
// (Tensor::to_f32(), memcpy). Gaps between tensors and trailing bytes are tolerated; overlapping
// byte ranges are not. Zero-size tensors are allowed and get a non-null `data`.
// The file must not be truncated by another process while mapped (that would raise SIGBUS).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ordo/tensor.hpp"

namespace ordo {

class SafeTensors {
 public:
  // Maps and validates `path`. Supported dtypes: F32, F16, BF16 (and I8 for ordo's own quantized files).
  // Unknown dtype strings and valid safetensors dtypes ordo does not handle (F64, I32, U8, BOOL, ...)
  // are both errors naming the tensor ("unknown dtype" / "unsupported dtype").
  static SafeTensors open(const std::string& path);

  const std::string& path() const { return path_; }
  bool has(const std::string& name) const { return tensors_.count(name) != 0; }
  // The tensor, borrowing the mapping (it stays mapped while any Tensor refers to it).
  // Throws Error "<file>: missing tensor '<name>'" if absent.
  const Tensor& get(const std::string& name) const;
  std::vector<std::string> names() const;  // sorted
  size_t size() const { return tensors_.size(); }
  const std::map<std::string, Tensor>& tensors() const { return tensors_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  // The whole mapped file: its pages may be dropped from memory (read-only, so reread on demand).
  std::pair<const unsigned char*, size_t> mapped_bytes() const { return mapped_; }
  const std::shared_ptr<void>& mapping() const { return mapping_; }  // keeps mapped_bytes() mapped

 private:
  std::string path_;
  std::shared_ptr<void> mapping_;
  std::pair<const unsigned char*, size_t> mapped_{nullptr, 0};
  std::map<std::string, Tensor> tensors_;
  std::map<std::string, std::string> metadata_;
};

// Writes tensors (any supported dtype) to a safetensors file with `metadata` (omitted when empty).
// Tensors are packed without gaps in the given order; the JSON header lists them in that order and is
// padded with spaces to a multiple of 8 bytes. The file is written to a temporary name next to `path`
// and renamed into place, so overwriting a file that is currently mapped (e.g. an input) is safe.
// Throws Error naming the file (and tensor) for duplicate names, a tensor without data, I/O errors.
void write_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace ordo
