// ggml's tensor types (names, block sizes) and a GGUF tensor's bytes turned into an ordo Tensor:
// F32/F16/BF16 as stored, Q8_0, Q4_0 and Q4_K as engine block tensors or dequantised to F32, the
// other types ordo decodes (ggml_decode.cpp) as F32 or, for a linear weight, re-encoded as Q8_0.
#include <cstring>
#include <vector>

#include "gguf.hpp"
#include "ordo/quant_blocks.hpp"

namespace ordo {
namespace {

struct TypeInfo {
  const char* name;
  uint32_t block;       // elements per block
  uint32_t block_size;  // bytes per block; 0 when ordo does not know it
};

// Indexed by ggml's type number; numbers ggml removed or never used have no name.
const TypeInfo kTypes[] = {
    {"F32", 1, 4},      {"F16", 1, 2},       {"Q4_0", 32, 18},   {"Q4_1", 32, 20},    {"", 0, 0},
    {"", 0, 0},         {"Q5_0", 32, 22},    {"Q5_1", 32, 24},   {"Q8_0", 32, 34},    {"Q8_1", 32, 36},
    {"Q2_K", 256, 84},  {"Q3_K", 256, 110},  {"Q4_K", 256, 144}, {"Q5_K", 256, 176},  {"Q6_K", 256, 210},
    {"Q8_K", 256, 292}, {"IQ2_XXS", 256, 0}, {"IQ2_XS", 256, 0}, {"IQ3_XXS", 256, 0}, {"IQ1_S", 256, 0},
    {"IQ4_NL", 32, 18}, {"IQ3_S", 256, 0},   {"IQ2_S", 256, 0},  {"IQ4_XS", 256, 0},  {"I8", 1, 1},
    {"I16", 1, 2},      {"I32", 1, 4},       {"I64", 1, 8},      {"F64", 1, 8},       {"IQ1_M", 256, 0},
    {"BF16", 1, 2},     {"", 0, 0},          {"", 0, 0},         {"", 0, 0},          {"TQ1_0", 256, 0},
    {"TQ2_0", 256, 0},  {"", 0, 0},          {"", 0, 0},         {"", 0, 0},          {"MXFP4", 32, 0},
    {"NVFP4", 64, 0},   {"Q1_0", 128, 0},    {"Q2_0", 64, 0},
};
constexpr uint32_t kNumTypes = sizeof(kTypes) / sizeof(kTypes[0]);

}  // namespace

std::string ggml_type_name(uint32_t type) { return type < kNumTypes ? kTypes[type].name : ""; }

std::string ggml_type_unread(const std::string& file, const std::string& tensor, uint32_t type) {
  return file + ": tensor '" + tensor + "' has type " + ggml_type_name(type) +
         ", which ordo does not read yet (it reads F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 and Q2_K-Q6_K)";
}

uint64_t ggml_type_block(uint32_t type) { return type < kNumTypes ? kTypes[type].block : 0; }

uint64_t ggml_type_bytes(uint32_t type, uint64_t n) {
  if (type >= kNumTypes || kTypes[type].block == 0) return 0;
  return n / kTypes[type].block * kTypes[type].block_size;
}

Tensor GgufFile::tensor(const GgufTensorInfo& info, bool keep_blocks) const {
  Tensor t;
  t.shape.assign(info.dims.rbegin(), info.dims.rend());
  const uint64_t n = static_cast<uint64_t>(t.numel());
  const unsigned char* src = base_ + data_start_ + info.offset;
  switch (info.type) {
    case kGgmlF32:
    case kGgmlF16:
    case kGgmlBF16: {
      t.dtype = info.type == kGgmlF32 ? DType::F32 : info.type == kGgmlF16 ? DType::F16 : DType::BF16;
      if (reinterpret_cast<uintptr_t>(src) % dtype_size(t.dtype) == 0) {
        t.data = const_cast<unsigned char*>(src);  // read-only mapping: tensors from files are never written
        t.owner = mapping_;
        return t;
      }
      Tensor copy = Tensor::uninitialized(t.shape, t.dtype);
      std::memcpy(copy.data, src, info.bytes);
      return copy;
    }
    case kGgmlQ8_0:
    case kGgmlQ4_0: {
      if (keep_blocks && t.ndim() == 2 && t.dim(1) % kQuantBlock == 0) {  // rows of whole blocks, borrowed
        t.dtype = info.type == kGgmlQ8_0 ? DType::Q8_0 : DType::Q4_0;
        t.data = const_cast<unsigned char*>(src);  // read-only mapping, as above
        t.owner = mapping_;
        return t;
      }
      Tensor out = Tensor::uninitialized(t.shape, DType::F32);
      (info.type == kGgmlQ8_0 ? dequantize_q8_0 : dequantize_q4_0)(src, static_cast<int64_t>(n), out.f32());
      return out;
    }
    case kGgmlQ4_K:
      if (keep_blocks && t.ndim() == 2) {  // rows are whole super-blocks (checked when the file was read)
        t.dtype = DType::Q4_K;
        t.data = const_cast<unsigned char*>(src);  // read-only mapping, as above
        t.owner = mapping_;
        return t;
      }
      [[fallthrough]];
    default: {
      if (!ggml_type_decodable(info.type)) throw Error(ggml_type_unread(path_, info.name, info.type));
      if (!keep_blocks || t.ndim() != 2 || t.dim(1) % kQuantBlock != 0) {
        Tensor f = Tensor::uninitialized(t.shape, DType::F32);
        ggml_decode(info.type, src, static_cast<int64_t>(n), f.f32());
        return f;
      }
      // No kernels for this type: a linear weight runs as Q8_0 blocks, whose rounding (at most half
      // of a 1/127 step of each 32 values' largest) is far below the type's own. A row at a time
      // (rows are whole blocks of the type, checked when the file was read): no F32 copy of the
      // tensor, which for a vocabulary-sized head is 4x the Q8_0 one.
      const int64_t cols = t.dim(1);
      const uint64_t in_row = ggml_type_bytes(info.type, static_cast<uint64_t>(cols));
      const size_t out_row = q8_0_bytes(cols);
      Tensor q = Tensor::uninitialized(t.shape, DType::Q8_0);
      std::vector<float> row(static_cast<size_t>(cols));
      for (int64_t r = 0; r < t.dim(0); ++r) {
        ggml_decode(info.type, src + static_cast<uint64_t>(r) * in_row, cols, row.data());
        quantize_q8_0(row.data(), cols, static_cast<uint8_t*>(q.data) + static_cast<size_t>(r) * out_row);
      }
      return q;
    }
  }
}

Tensor gguf_rope_rows(const Tensor& t, int64_t heads, bool to_gguf, const std::string& what) {
  const int64_t rows = t.dim(0);
  if (heads <= 0 || rows <= 0 || rows % heads != 0 || (rows / heads) % 2 != 0)
    throw Error(what + " has " + std::to_string(rows) + " rows, not a whole number of " + std::to_string(heads) +
                " heads of even size");
  const int64_t hd = rows / heads, half = hd / 2;
  const size_t row_bytes = t.nbytes() / static_cast<size_t>(rows);
  Tensor out = Tensor::uninitialized(t.shape, t.dtype);
  const auto* src = static_cast<const unsigned char*>(t.data);
  auto* dst = static_cast<unsigned char*>(out.data);
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t i = 0; i < half; ++i)
      for (int64_t j = 0; j < 2; ++j) {
        const int64_t file_row = h * hd + 2 * i + j, hf_row = h * hd + j * half + i;
        std::memcpy(dst + (to_gguf ? file_row : hf_row) * row_bytes, src + (to_gguf ? hf_row : file_row) * row_bytes,
                    row_bytes);
      }
  return out;
}

}  // namespace ordo
