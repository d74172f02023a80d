// Real-shape models with random weights, for benchmarks and tests where a real checkpoint of that
// size cannot be had.
#pragma once

#include <cstdint>
#include <string>

#include "ordo/spec.hpp"
#include "ordo/tensor.hpp"

namespace ordo {

// A Llama-shaped decoder (RMSNorm, SwiGLU, RoPE, GQA) with random weights, for benchmarks.
struct SyntheticShape {
  int64_t dim = 768, layers = 12, heads = 12, kv_heads = 12, ffn = 2048, vocab = 32000;
  int64_t max_positions = 2048;
  bool tied_head = true;
};

// "110m" (dim 768, 12 layers, 12 heads, ffn 2048, vocab 32000, tied head: llama2.c's stories110M),
// "1b" (TinyLlama-1.1B: dim 2048, 22 layers, 32 heads, 4 kv heads, ffn 5632, vocab 32000, untied),
// or "DIM,LAYERS,HEADS,KV_HEADS,FFN,VOCAB". Throws Error on anything else.
SyntheticShape parse_synthetic_shape(const std::string& text);

// Builds the model directly in `dtype` (no F32 copy for I8/F16/BF16): weights uniform in
// ±1/sqrt(fan_in) from a seeded xorshift generator (filled in parallel; deterministic for a seed
// and thread-count independent), norm weights 1. Q4_K: random super-blocks (random_q4_k) and a Q8_0
// head, as ordo runs a Q4_K_M file.
ModelSpec synthetic_llama(const SyntheticShape& shape, DType dtype = DType::F32, uint64_t seed = 1);

// A Q4_K weight [rows, cols] (cols a multiple of 256, else Error) of random codes, scales and mins,
// values within about [-a, 2a]: ordo reads Q4_K from files and writes none, so its benchmarks and
// tests (and synthetic_llama with DType::Q4_K) make their weights here.
Tensor random_q4_k(int64_t rows, int64_t cols, uint64_t seed, float a);

}  // namespace ordo
