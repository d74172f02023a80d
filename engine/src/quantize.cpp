// Weight dtype conversion (F32/F16/BF16/I8 per-row symmetric/Q8_0/Q4_0 blocks).
#include "ordo/quantize.hpp"

#include <omp.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <tuple>
#include <vector>

#include "kernels/gemm_backend.hpp"
#include "kernels/panels.hpp"
#include "kernels/parallel_errors.hpp"
#include "ordo/quant_blocks.hpp"

namespace ordo {

DType parse_weight_dtype(const std::string& name) {
  std::string s = name;
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  if (s == "f32" || s == "float32" || s == "fp32") return DType::F32;
  if (s == "f16" || s == "float16" || s == "fp16") return DType::F16;
  if (s == "bf16" || s == "bfloat16") return DType::BF16;
  if (s == "int8" || s == "i8" || s == "q8") return DType::I8;
  if (s == "q8_0") return DType::Q8_0;
  if (s == "q4_0") return DType::Q4_0;
  throw Error("unknown weight dtype '" + name + "' (valid: f32, f16, bf16, int8, q8_0, q4_0)");
}

const char* weight_dtype_name(DType t) {
  switch (t) {
    case DType::F32: return "f32";
    case DType::F16: return "f16";
    case DType::BF16: return "bf16";
    case DType::I8: return "int8";
    case DType::Q8_0: return "q8_0";
    case DType::Q4_0: return "q4_0";
    case DType::Q4_K: return "q4_k";
  }
  return "?";
}

namespace {

// Row r of a 2-D weight as F32 (I8 rows multiplied by their scale).
void row_f32(const Tensor& w, const float* scales, int64_t r, float* dst) {
  const int64_t K = w.dim(1);
  switch (w.dtype) {
    case DType::F32: std::memcpy(dst, w.f32() + r * K, K * sizeof(float)); return;
    case DType::F16:
    case DType::BF16: {
      const auto* p = static_cast<const unsigned char*>(w.data) + 2 * r * K;
      for (int64_t k = 0; k < K; ++k) {
        uint16_t h;
        std::memcpy(&h, p + 2 * k, 2);
        dst[k] = w.dtype == DType::F16 ? f16_to_f32(h) : bf16_to_f32(h);
      }
      return;
    }
    case DType::I8: {
      const auto* p = static_cast<const int8_t*>(w.data) + r * K;
      const float s = scales[r];
      for (int64_t k = 0; k < K; ++k) dst[k] = static_cast<float>(p[k]) * s;
      return;
    }
    case DType::Q8_0:
    case DType::Q4_0:
    case DType::Q4_K: {
      const auto* p = static_cast<const uint8_t*>(w.data) + static_cast<size_t>(r) * dtype_row_bytes(w.dtype, K);
      (w.dtype == DType::Q8_0   ? dequantize_q8_0
       : w.dtype == DType::Q4_0 ? dequantize_q4_0
                                : dequantize_q4_k)(p, K, dst);
      return;
    }
  }
}

// Quantises one F32 row to int8 with a symmetric scale max|x| / 127.
void quantize_row(const float* x, int64_t K, int8_t* q, float* scale) {
  float mx = 0.0f;
  for (int64_t k = 0; k < K; ++k) mx = std::max(mx, std::fabs(x[k]));
  const float s = mx / 127.0f;
  *scale = s;
  const float inv = s > 0.0f ? 1.0f / s : 0.0f;
  for (int64_t k = 0; k < K; ++k) {
    const float v = std::nearbyint(x[k] * inv);
    q[k] = static_cast<int8_t>(std::max(-127.0f, std::min(127.0f, v)));
  }
}

}  // namespace

Linear convert_linear(const Linear& l, DType to) {
  if (!l.present() || l.weight.dtype == to) return l;
  const Tensor& w = l.weight;
  if (w.empty())
    throw Error("convert_linear: the " + std::string(dtype_name(w.dtype)) + " " + w.shape_str() +
                " weight's values were released when it was packed (convert before packing)");
  if (w.ndim() != 2) throw Error("convert_linear: weight must be 2-D, got " + w.shape_str());
  if (w.dtype == DType::I8 && (l.scales.empty() || l.scales.numel() != w.dim(0)))
    throw Error("convert_linear: I8 weight " + w.shape_str() + " without matching scales");
  const int64_t N = w.dim(0), K = w.dim(1);
  if (to == DType::Q4_K)
    throw Error("convert_linear: ordo reads q4_k weights from GGUF files but does not write them (to: q8_0, q4_0)");
  if (is_block_dtype(to) && K % kQuantBlock != 0)
    throw Error(std::string("convert_linear: a ") + weight_dtype_name(to) +
                " weight needs a multiple of 32 columns, got " + w.shape_str());
  const float* in_scales = w.dtype == DType::I8 ? l.scales.f32() : nullptr;
  Linear out;
  out.bias = l.bias;
  out.weight = Tensor::zeros({N, K}, to);
  if (to == DType::I8) out.scales = Tensor::zeros({N});
  detail::ensure_threads();
  detail::ParallelErrors errors;  // an exception must not leave the parallel region
#pragma omp parallel
  {
    std::vector<float> row;
    errors.run([&] { row.resize(static_cast<size_t>(K)); });
#pragma omp for schedule(static)
    for (int64_t r = 0; r < N; ++r)
      errors.run([&] {
        if (row.empty()) return;  // this thread's row failed to allocate: the error is kept
        row_f32(w, in_scales, r, row.data());
        switch (to) {
          case DType::F32: std::memcpy(out.weight.f32() + r * K, row.data(), K * sizeof(float)); break;
          case DType::F16:
          case DType::BF16: {
            auto* d = static_cast<uint16_t*>(out.weight.data) + r * K;
            for (int64_t k = 0; k < K; ++k) d[k] = to == DType::F16 ? f32_to_f16(row[k]) : f32_to_bf16(row[k]);
            break;
          }
          case DType::I8:
            quantize_row(row.data(), K, static_cast<int8_t*>(out.weight.data) + r * K, out.scales.f32() + r);
            break;
          case DType::Q4_K: break;  // refused above
          case DType::Q8_0:
          case DType::Q4_0: {
            auto* d = static_cast<uint8_t*>(out.weight.data) + static_cast<size_t>(r) * dtype_row_bytes(to, K);
            (to == DType::Q8_0 ? quantize_q8_0 : quantize_q4_0)(row.data(), K, d);
            break;
          }
        }
      });
  }
  errors.rethrow();
  return out;
}

namespace {

int64_t linear_bytes(const Linear& l) {
  if (!l.present()) return 0;
  // Q4_K's panels hold its scales and mins unpacked (4.625 bits per weight to the file's 4.5): what is read.
  if (l.panels && l.weight.dtype == DType::Q4_K) return l.panels->panels * l.panels->panel_bytes;
  return static_cast<int64_t>(l.weight.nbytes() + (l.scales.empty() ? 0 : l.scales.nbytes()));
}

}  // namespace

void convert_weights(ModelSpec& spec, DType to, const WeightDone& on_done, bool keep_blocks) {
  // Original weight data → converted layer (shared weights). A source is compared by address only
  // while it is alive: all sources exist before the loop, so a freed one's address is never another's.
  std::map<const void*, Linear> done;
  spec.for_each_linear([&](Linear& l) {
    if (!l.present() || l.weight.dtype == to || (keep_blocks && is_block_dtype(l.weight.dtype))) return;
    // Blocks need whole 32-column rows: a narrower weight keeps its dtype, as llama.cpp's quantizer
    // leaves such tensors unquantized.
    if (is_block_dtype(to) && l.weight.ndim() == 2 && l.weight.dim(1) % kQuantBlock != 0) return;
    auto it = done.find(l.weight.data);
    if (it != done.end()) {
      Tensor bias = l.bias;
      l = it->second;
      l.bias = bias;
      return;
    }
    const Tensor source = l.weight;
    l = convert_linear(l, to);
    done.emplace(source.data, l);
    if (on_done) on_done(source);
  });  // `source` went out of scope with each call: a source only this spec held is freed already
}

namespace {

// Frees a packed weight's values when nothing but this Linear refers to their storage (the panels
// are the engine's copy). Shape and dtype stay: they describe the layer (view_linear checks them).
void release_if_sole_owner(Linear& l) {
  if (l.panels && l.weight.owner && l.weight.owner.use_count() == 1) {
    l.weight.owner.reset();
    l.weight.data = nullptr;
  }
}

}  // namespace

int64_t pack_panels(ModelSpec& spec, const WeightDone& on_done) {
  std::map<std::tuple<const void*, int64_t, int64_t, DType>, std::shared_ptr<const PanelWeight>> done;
  int64_t bytes = 0;
  spec.for_each_linear([&](Linear& l) {
    if (!l.present() || l.weight.ndim() != 2 || l.panels) return;
    const auto key =
        std::make_tuple(static_cast<const void*>(l.weight.data), l.weight.dim(0), l.weight.dim(1), l.weight.dtype);
    auto it = done.find(key);
    if (it != done.end()) {
      l.panels = it->second;
      return;
    }
    if (pack_panels(l)) bytes += static_cast<int64_t>(l.weight.nbytes());
    done.emplace(key, l.panels);
    if (on_done) on_done(l.weight);
    release_if_sole_owner(l);
  });
  return bytes;
}

int64_t decode_weight_bytes(const ModelSpec& spec) {
  int64_t n = 0;
  for (const Layer& l : spec.decoder.layers) {
    for (const Linear* p : {&l.self_attn.q, &l.self_attn.k, &l.self_attn.v, &l.self_attn.out, &l.cross_attn.q,
                            &l.cross_attn.out, &l.ffn.up, &l.ffn.gate, &l.ffn.down})
      n += linear_bytes(*p);
  }
  return n + linear_bytes(spec.lm_head);
}

int64_t decoder_linear_params(const ModelSpec& spec) {
  int64_t n = 0;
  for (const Layer& l : spec.decoder.layers)
    for (const Linear* p : {&l.self_attn.q, &l.self_attn.k, &l.self_attn.v, &l.self_attn.out, &l.cross_attn.q,
                            &l.cross_attn.out, &l.ffn.up, &l.ffn.gate, &l.ffn.down})
      if (p->present()) n += p->weight.numel();
  return n;
}

}  // namespace ordo
