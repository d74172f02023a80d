// Weight storage types.
//
// Linear weights may be stored F32, F16, BF16 or I8 (weight-only, per output row symmetric:
// scale[n] = max|W[n, :]| / 127, q = round(W / scale)); every op still computes in F32
// (see linear() in ops.hpp). Conversion happens once, at load, over a whole ModelSpec.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "ordo/spec.hpp"
#include "ordo/tensor.hpp"

namespace ordo {

// "f32" / "f16" / "bf16" / "int8" / "q8_0" / "q4_0" (also "i8", "float32", "float16", "bfloat16";
// case-insensitive). q8_0 / q4_0 are llama.cpp's 32-element blocks (ordo/quant_blocks.hpp), run by
// W8A8 / W4A8 kernels (activations quantized to int8 per 32-element block with ggml's reference rounding).
// Throws Error naming the value otherwise.
DType parse_weight_dtype(const std::string& name);
// "f32", "f16", "bf16", "int8", "q8_0", "q4_0": the spelling parse_weight_dtype accepts and the CLI prints.
const char* weight_dtype_name(DType t);

// The linear layer with its weight stored as `to` (bias unchanged). I8 → F32/F16/BF16 dequantises
// (applying the scales); anything → I8 quantises per output row. Same dtype: returned as is.
Linear convert_linear(const Linear& l, DType to);

// Called with a weight the spec no longer reads once its converted or packed copy is made (the
// source tensor, its data still pointing where it did): a loader that borrowed it from a file
// mapping can let those pages go (see models' Model::load), so a model is not held twice.
using WeightDone = std::function<void(const Tensor& source)>;

// Converts every Linear weight of the spec (attention q/k/v/out, FFN, cross-attention, lm_head,
// pooler) to `to`, once per distinct weight (shared weights stay shared). Embedding tables, norms
// and biases stay as they are; a head tied to tok_embed gets its own converted copy and tok_embed
// is left alone. A source held by this spec alone is freed as soon as it is converted; `done` sees
// every source converted. A weight whose values pack_panels released cannot be converted (Error).
// keep_blocks: Q8_0 / Q4_0 / Q4_K weights stay as they are (a GGUF file's quantized layers, run as
// stored).
// To Q8_0 / Q4_0, a weight whose input width is not a multiple of 32 keeps its dtype (llama.cpp's
// quantizer leaves such tensors unquantized too); convert_linear refuses it.
void convert_weights(ModelSpec& spec, DType to, const WeightDone& done = {}, bool keep_blocks = false);

// pack_panels() on every Linear of the spec that has no panels yet, once per distinct weight
// (shared weights share the copy). Returns the bytes of panel copies made. Transformer does this
// for its spec. A weight whose storage nothing outside this Linear refers to (a heap block only
// it holds: converted, or built and moved in) is released right after it is packed, keeping its
// shape and dtype: the panels are the copy the engine reads, and holding both would double the
// model's memory. Weights that others share (a borrowed file mapping, a tied embedding, a spec
// the caller kept a copy of) keep their values. `done` sees every weight packed, before any release.
int64_t pack_panels(ModelSpec& spec, const WeightDone& done = {});

// Bytes of linear weights (and I8 scales) one decode step streams: every decoder-stack linear plus
// the lm_head (cross-attention k/v excluded: computed once per sequence).
int64_t decode_weight_bytes(const ModelSpec& spec);
// Parameters of the decoder stack's linear layers (the 2·params·T part of a forward's FLOPs),
// without the lm_head.
int64_t decoder_linear_params(const ModelSpec& spec);

}  // namespace ordo
