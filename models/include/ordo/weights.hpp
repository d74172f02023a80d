// The weights of a model directory, whichever way Hugging Face stored them: one model.safetensors;
// sharded safetensors (model-0000i-of-0000n.safetensors with model.safetensors.index.json); a
// PyTorch pytorch_model.bin (torch.save's zip format, read by a restricted unpickler that never
// executes the pickle); or sharded .bin with pytorch_model.bin.index.json. Tensors are F32, F16 or
// BF16 as stored (I8 too in ordo's own quantized safetensors) and point into the memory-mapped files
// wherever the bytes are laid out as the tensor (always for safetensors; for .bin unless a tensor
// is a strided view, which is copied). Errors name the file (the index for a missing shard or a
// tensor the index misplaces) and the tensor or field.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ordo/tensor.hpp"

namespace ordo {

class Weights {
 public:
  // The first of model.safetensors, model.safetensors.index.json, pytorch_model.bin and
  // pytorch_model.bin.index.json in `dir` (Hugging Face's order of preference). With none, an Error
  // naming the four and the files the directory does hold. A GGUF file instead of a directory: its
  // tensors under Hugging Face's names, as the model is built from them (block types decoded to F32).
  static Weights open_dir(const std::string& dir);
  // One weights file: safetensors, or a PyTorch zip checkpoint (recognised by its content).
  static Weights open_file(const std::string& path);

  // Tensors another reader made (a GGUF file's, renamed to Hugging Face's names): `origin` is the
  // file errors name, `format` e.g. "gguf", `mapped` the file the borrowed tensors point into.
  struct MappedFile;
  static Weights from_tensors(const std::string& origin, const std::string& format,
                              std::map<std::string, Tensor> tensors, std::map<std::string, std::string> unsupported,
                              const MappedFile& mapped);

  // The file errors about missing tensors name: the weights file, or the index of shards.
  const std::string& origin() const { return origin_; }
  // "safetensors", "safetensors, 3 shards", "pytorch", "pytorch, 2 shards".
  const std::string& format() const { return format_; }
  // Every file read, the index first when there is one.
  const std::vector<std::string>& files() const { return files_; }

  // True also for a tensor stored in a dtype ordo cannot read (get() then says so).
  bool has(const std::string& name) const { return tensors_.count(name) || unsupported_.count(name); }
  // Error "<origin>: missing tensor '<name>'", or "<file>: tensor '<name>': unsupported dtype ...".
  const Tensor& get(const std::string& name) const;
  // The file holding `name` (origin() when absent).
  const std::string& file_of(const std::string& name) const;
  std::vector<std::string> names() const;  // the readable tensors, sorted
  const std::map<std::string, Tensor>& tensors() const { return tensors_; }
  // Lets go of this object's hold on the values of `t` (a tensor get() returned) when they are not
  // borrowed from a file's mapping (a GGUF K-quant tensor decoded at load): its entry keeps name,
  // shape and dtype, with no data. For a loader done with them (converted or packed elsewhere), so
  // the values are freed once nothing else holds them. Anything else: no effect.
  void release_values(const Tensor& t);
  // Tensors ordo cannot read, with why (e.g. an int64 buffer in a .bin): name -> message.
  const std::map<std::string, std::string>& unsupported() const { return unsupported_; }
  // The safetensors "__metadata__" (of the first shard); {"format": "pt"} for PyTorch files.
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  // Each file's read-only mapping, which tensors borrowed from the files point into (tensors
  // copied out of a .bin do not): pages there may be dropped and are reread from the file.
  // `keep` holds the mapping: a span outlives no mapping, so a dropped page is never another
  // allocation's.
  struct MappedFile {
    const unsigned char* begin = nullptr;
    size_t size = 0;
    std::shared_ptr<void> keep;
  };
  const std::vector<MappedFile>& mapped_files() const { return mapped_; }

 private:
  std::string origin_, format_;
  std::vector<std::string> files_;
  std::map<std::string, Tensor> tensors_;
  std::map<std::string, size_t> file_index_;  // name -> index in files_
  std::map<std::string, std::string> unsupported_;
  std::map<std::string, std::string> metadata_;
  std::vector<MappedFile> mapped_;
  void add_file(const std::string& path, const std::string& index, const std::string& shard);
};

}  // namespace ordo
