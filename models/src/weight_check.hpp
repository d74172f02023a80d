// Poisoned weights named at load: a NaN or Inf in any tensor the model is built from, and values a
// conversion would not hold (beyond F16's range; non-finite under int8), each an Error naming the
// file, the checkpoint tensor, the first bad index and its value.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "model_dir.hpp"

namespace ordo {

// Checks every tensor the family read (l.fetched_names; `spec` is what it built from them) for NaN and ±inf, and, when
// the linear weights will be stored as `target`, that converting them loses no value to infinity (F16: |x| < 65520,
// what rounds to at most 65504) and that int8 gets only finite values. With allow_nonfinite a NaN or Inf is returned as
// a warning instead (one per tensor); the range and int8 checks stay errors: the stored model would not be the one the
// file describes.
std::vector<std::string> check_weights(const Loaded& l, const ModelSpec& spec, DType target, bool allow_nonfinite);

// The same checks with the linear weights' scan fused into the load: check_now(true) checks every
// other tensor (embeddings, norms, biases, fused sources a family split) and the F16 range; the
// loader then hands each source to check_source() as conversion or packing finishes reading it,
// while its pages are still resident (a separate pass would fault the whole file in once more),
// and calls finish() for any it did not hand over. `l` and `spec` must outlive it.
class WeightCheck {
 public:
  WeightCheck(const Loaded& l, const ModelSpec& spec, DType target, bool allow_nonfinite);
  void check_now(bool defer_linears);
  void check_source(const Tensor& source);
  void finish();
  std::vector<std::string> warnings;

 private:
  const Loaded& l_;
  const ModelSpec& spec_;
  DType target_;
  bool allow_;
  std::vector<std::string> names_;              // fetched tensors, each once, in fetch order
  std::map<const void*, std::string> by_data_;  // a fetched tensor's data → its name
  std::set<const void*> linear_data_;           // data of the spec's linear weights
  std::set<std::string> checked_;
  void check_tensor(const std::string& name);
  void check_linears();
};

}  // namespace ordo
