// Non-finite values found and named: the weight check at load and the logits check of every run.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ordo/tensor.hpp"

namespace ordo {

// Flat index of the first NaN or ±inf element of t, -1 when every element is finite. F32, F16, BF16:
// read once, in parallel chunks, comparing exponent bits only. I8 holds none. Q8_0 / Q4_0 / Q4_K: the
// first element of the first block with an fp16 scale that is NaN or inf (the codes are integers).
int64_t first_nonfinite(const Tensor& t);
int64_t first_nonfinite(const float* x, int64_t n);
// Elements of t that are NaN or ±inf (for messages: counted only once one is found).
int64_t count_nonfinite(const Tensor& t);
// Element i of an F32, F16, BF16, Q8_0, Q4_0 or Q4_K tensor as float (I8: the stored integer).
float element_as_f32(const Tensor& t, int64_t i);
// Flat index i of `shape` as "[r, c]".
std::string index_str(const std::vector<int64_t>& shape, int64_t i);
// "NaN", "inf", "-inf", or the value as %g.
std::string value_str(float v);

// What check_finite_row throws: an Error of its own type, so that a sweep which reports a failing
// setting and goes on (ppl's rows) can stop instead: non-finite logits are the model's fault and
// would fail every setting alike.
class NonFiniteError : public Error {
 public:
  using Error::Error;
};

// NonFiniteError "<what> at position P are NaN (vocabulary entry E): the model's weights or activations are
// not finite (check with ordo inspect)" when row [0, n) holds a NaN or ±inf; nothing otherwise.
// A run stops here rather than turning NaN scores into tokens (every comparison with NaN is false,
// so an argmax or a sort silently picks some id).
void check_finite_row(const float* row, int64_t n, int64_t position, const std::string& what = "logits");

}  // namespace ordo
