// Poisoned weights named at load: a NaN or Inf in any tensor the model is built from, and values a
// conversion would not hold (beyond F16's range; non-finite under int8), each an Error naming the
// file, the checkpoint tensor, the first bad index and its value.
#pragma once

#include <string>
#include <vector>

#include "model_dir.hpp"

namespace ordo {

// Checks every tensor the family read (l.fetched_names; `spec` is what it built from them) for NaN and ±inf, and, when the linear
// weights will be stored as `target`, that converting them loses no value to infinity (F16:
// |x| < 65520, what rounds to at most 65504) and that int8 gets only finite values. With
// allow_nonfinite a NaN or Inf is returned as a warning instead (one per tensor); the range and
// int8 checks stay errors: the stored model would not be the one the file describes.
std::vector<std::string> check_weights(const Loaded& l, const ModelSpec& spec, DType target, bool allow_nonfinite);

}  // namespace ordo
