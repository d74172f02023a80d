// Load-time weight checks (weight_check.hpp): one parallel pass over each tensor the model reads.
#include "weight_check.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>

#include "ordo/finite.hpp"
#include "ordo/quantize.hpp"

namespace ordo {
namespace {

// F32 values that round to ±inf in F16 (65520 is halfway between 65504 and 2^16: ties to even).
constexpr float kF16Overflow = 65520.0f;

std::string where(const Weights& w, const std::string& name) { return w.file_of(name) + ": tensor '" + name + "'"; }

bool same_value(float a, float b) { return a == b || (std::isnan(a) && std::isnan(b)); }

// Whether an F32 value's bits are finite and at least 65520 in magnitude.
inline bool f16_overflow_bits(uint32_t u) {
  const uint32_t a = u & 0x7fffffffu;
  return a >= 0x477ff000u && a < 0x7f800000u;
}

// First element of a linear weight, as `to` would be given it, that `to` cannot hold: beyond F16's
// range, or non-finite for I8. -1 when none. I8 weights are read with their row scales.
int64_t first_unconvertible(const Linear& lin, DType to, float* value) {
  const Tensor& w = lin.weight;
  const int64_t n = w.numel();
  const int64_t K = w.ndim() == 2 ? w.dim(1) : n;
  int64_t from = 0;
  if (is_block_dtype(w.dtype)) return -1;  // fp16 scales times small integers
  if (w.dtype == DType::F32 && to == DType::F16) {
    // The common case (an F32 checkpoint loaded as f16): branch-free blocks, then the exact element.
    const auto* u = static_cast<const uint32_t*>(w.data);
    constexpr int64_t kBlock = 4096;
    for (; from < n; from += kBlock) {
      uint32_t bad = 0;
      const int64_t e = std::min(n, from + kBlock);
      for (int64_t i = from; i < e; ++i) bad |= f16_overflow_bits(u[i]);
      if (bad) break;
    }
    if (from >= n) return -1;
  } else if ((to == DType::I8 || is_block_dtype(to)) && w.dtype != DType::I8) {
    from = first_nonfinite(w);
    if (from < 0) return -1;
  }
  for (int64_t i = from; i < n; ++i) {
    float v = element_as_f32(w, i);
    if (w.dtype == DType::I8) v *= lin.scales.f32()[i / K];
    const bool bad = to == DType::F16 ? std::isfinite(v) && std::fabs(v) >= kF16Overflow : !std::isfinite(v);
    if (bad) {
      *value = v;
      return i;
    }
  }
  return -1;
}

}  // namespace

WeightCheck::WeightCheck(const Loaded& l, const ModelSpec& spec, DType target, bool allow_nonfinite)
    : l_(l), spec_(spec), target_(target), allow_(allow_nonfinite) {
  for (const std::string& name : l.fetched_names) {
    const Tensor& t = l.weights->get(name);
    if (by_data_.emplace(t.data, name).second) names_.push_back(name);
  }
}

void WeightCheck::check_tensor(const std::string& name) {
  if (!checked_.insert(name).second) return;
  const Weights& w = *l_.weights;
  const Tensor& t = w.get(name);
  if (!t.data) return;  // let go by Weights::release_values, which the loader calls after check_source
  const int64_t i = first_nonfinite(t);
  if (i < 0) return;
  const std::string what = where(w, name) + " holds " + value_str(element_as_f32(t, i)) + " at " +
                           index_str(t.shape, i) + " (" + std::to_string(count_nonfinite(t)) + " of its " +
                           std::to_string(t.numel()) + " values are not finite)";
  if ((target_ == DType::I8 || is_block_dtype(target_)) && linear_data_.count(t.data))
    throw Error(what + ": " + weight_dtype_name(target_) + " quantization cannot represent a value that is not finite");
  if (!allow_)
    throw Error(what +
                ": the weights are corrupt (allow_nonfinite, --allow-nonfinite on the command line, "
                "loads them anyway)");
  warnings.push_back(what);
}

void WeightCheck::check_now(bool defer_linears) {
  spec_.for_each_linear([&](const Linear& lin) {
    if (lin.present() && !lin.weight.empty()) linear_data_.insert(lin.weight.data);
  });
  for (const std::string& name : names_)
    if (!defer_linears || !linear_data_.count(l_.weights->get(name).data)) check_tensor(name);
  if (!defer_linears) {
    // Non-finite values in a weight the family split or transposed (its source is checked above,
    // but int8 must refuse them even when allowed).
    if ((target_ == DType::I8 || is_block_dtype(target_)) && !warnings.empty()) check_linears();
  }
  if (target_ == DType::F16) check_linears();  // conversion would overflow past its range
}

void WeightCheck::check_source(const Tensor& source) {
  auto it = by_data_.find(source.data);
  if (it != by_data_.end() && linear_data_.count(source.data)) check_tensor(it->second);
}

void WeightCheck::finish() {
  for (const std::string& name : names_) check_tensor(name);
}

void WeightCheck::check_linears() {
  const Weights& w = *l_.weights;
  std::set<const void*> done;
  spec_.for_each_linear([&](const Linear& lin) {
    if (!lin.present() || lin.weight.empty() || lin.weight.dtype == target_ || !done.insert(lin.weight.data).second)
      return;
    float v = 0;
    const int64_t i = first_unconvertible(lin, target_, &v);
    if (i < 0) return;
    // Named by the checkpoint tensor it came from: the same data, or (a weight the family split or
    // transposed) the tensor holding the same value.
    std::string name;
    int64_t at = i;
    std::vector<int64_t> shape = lin.weight.shape;
    auto it = by_data_.find(lin.weight.data);
    if (it != by_data_.end()) {
      name = it->second;
    } else {
      for (const std::string& n : names_) {
        const Tensor& t = w.get(n);
        if (t.dtype == DType::I8) continue;
        for (int64_t k = 0, e = t.numel(); k < e && name.empty(); ++k)
          if (same_value(element_as_f32(t, k), v)) {
            name = n;
            at = k;
            shape = t.shape;
          }
        if (!name.empty()) break;
      }
    }
    const std::string what =
        name.empty() ? "a linear weight " + lin.weight.shape_str() + " derived from the checkpoint" : where(w, name);
    if (target_ == DType::F16)
      throw Error(what + " holds " + value_str(v) + " at " + index_str(shape, at) +
                  ", beyond F16's range (largest finite value 65504): stored as f16 it would be infinite; keep "
                  "f32 or use bf16 (F32's range)");
    throw Error(what + " holds " + value_str(v) + " at " + index_str(shape, at) +
                ": int8 quantization cannot represent a value that is not finite");
  });
}

std::vector<std::string> check_weights(const Loaded& l, const ModelSpec& spec, DType target, bool allow_nonfinite) {
  WeightCheck c(l, spec, target, allow_nonfinite);
  c.check_now(false);
  return c.warnings;
}

}  // namespace ordo
