// How `ordo quantize --format gguf` stores each tensor: the ggml type llama.cpp's quantizer would
// pick for it under a file type, and the tensor's F32 values encoded in that type.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ordo/tensor.hpp"

namespace ordo {

enum class GgufOut { F32, F16, BF16, Q8_0, Q4_0 };

// "f32", "f16", "bf16", "q8_0", "q4_0" (any case); an Error naming `flag` otherwise.
GgufOut parse_gguf_out(const std::string& dtype, const std::string& flag);
const char* gguf_out_name(GgufOut t);
// general.file_type (llama.cpp's llama_ftype number).
uint32_t gguf_file_type(GgufOut t);

// The ggml type of tensor `name` (GGUF name, dims innermost first) in a file of type `t`, as
// llama.cpp's converter (f32/f16/bf16) and quantizer (q8_0/q4_0) choose: 1-D tensors F32; rows not
// a whole number of 32-element blocks F16; for q4_0 the output projection (token_embd when tied)
// Q8_0 (llama.cpp picks Q6_K where the row is a whole number of 256-blocks, which ordo does not
// write, and Q8_0 otherwise).
uint32_t gguf_tensor_type(GgufOut t, const std::string& name, const std::vector<int64_t>& dims, bool tied);
// Bytes of n elements in ggml type `type` (F32, F16, BF16, Q8_0, Q4_0).
uint64_t gguf_tensor_bytes(uint32_t type, uint64_t n);
// `values` (any float dtype, converted to F32 first) encoded as ggml type `type`.
std::vector<uint8_t> encode_tensor(const Tensor& values, uint32_t type);
// An Error "<what> holds NaN at [r, c] (element i): GGUF Q8_0 cannot store ..." when `values` holds a
// NaN or inf, or for F16 a magnitude that rounds to inf: the encoders would write it silently wrong
// (NaN as 0 or a block's extreme code, inf as an inf block scale).
void check_encodable(const Tensor& values, uint32_t type, const std::string& what);

}  // namespace ordo
