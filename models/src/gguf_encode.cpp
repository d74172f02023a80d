// Tensor types and encodings for GGUF output (gguf_encode.hpp). The Q8_0/Q4_0 blocks come from the
// engine's block codec (ordo/quant_blocks.hpp), which rounds as ggml's reference quantizer does.
#include "gguf_encode.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>

#include "ordo/finite.hpp"
#include "ordo/quant_blocks.hpp"
#include "weights/gguf.hpp"

namespace ordo {

GgufOut parse_gguf_out(const std::string& dtype, const std::string& flag) {
  std::string d = dtype;
  std::transform(d.begin(), d.end(), d.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (d == "f32") return GgufOut::F32;
  if (d == "f16") return GgufOut::F16;
  if (d == "bf16") return GgufOut::BF16;
  if (d == "q8_0") return GgufOut::Q8_0;
  if (d == "q4_0") return GgufOut::Q4_0;
  throw Error(flag + " '" + dtype + "': a GGUF file is written as f32, f16, bf16, q8_0 or q4_0");
}

const char* gguf_out_name(GgufOut t) {
  switch (t) {
    case GgufOut::F32: return "f32";
    case GgufOut::F16: return "f16";
    case GgufOut::BF16: return "bf16";
    case GgufOut::Q8_0: return "q8_0";
    case GgufOut::Q4_0: return "q4_0";
  }
  return "?";
}

uint32_t gguf_file_type(GgufOut t) {
  switch (t) {  // llama_ftype: ALL_F32 0, MOSTLY_F16 1, MOSTLY_Q4_0 2, MOSTLY_Q8_0 7, MOSTLY_BF16 32
    case GgufOut::F32: return 0;
    case GgufOut::F16: return 1;
    case GgufOut::BF16: return 32;
    case GgufOut::Q8_0: return 7;
    case GgufOut::Q4_0: return 2;
  }
  return 0;
}

uint32_t gguf_tensor_type(GgufOut t, const std::string& name, const std::vector<int64_t>& dims, bool tied) {
  if (dims.size() < 2 || t == GgufOut::F32) return kGgmlF32;
  if (t == GgufOut::F16) return kGgmlF16;
  if (t == GgufOut::BF16) return kGgmlBF16;
  if (dims[0] % 32 != 0) return kGgmlF16;  // llama.cpp's fallback for rows of a 32-block type
  const bool output = name == "output.weight" || (tied && name == "token_embd.weight");
  if (t == GgufOut::Q8_0 || output) return kGgmlQ8_0;
  return kGgmlQ4_0;
}

uint64_t gguf_tensor_bytes(uint32_t type, uint64_t n) {
  switch (type) {
    case kGgmlF32: return n * 4;
    case kGgmlF16:
    case kGgmlBF16: return n * 2;
    case kGgmlQ8_0: return n / 32 * 34;
    case kGgmlQ4_0: return n / 32 * 18;
    default: throw Error("GGUF writer: type " + ggml_type_name(type) + " is not written");
  }
}

void check_encodable(const Tensor& values, uint32_t type, const std::string& what) {
  int64_t i = first_nonfinite(values);
  constexpr float kF16Inf = 65520.0f;  // the smallest magnitude f16 rounds to inf (65504 is its largest)
  if (i < 0 && type == kGgmlF16 && values.dtype != DType::F16)
    for (int64_t j = 0, n = values.numel(); j < n && i < 0; ++j)
      if (std::fabs(element_as_f32(values, j)) >= kF16Inf) i = j;
  if (i < 0) return;
  const float v = element_as_f32(values, i);
  throw Error(what + " holds " + value_str(v) + " at " + index_str(values.shape, i) + " (element " + std::to_string(i) +
              "): GGUF " + ggml_type_name(type) + " cannot store " +
              (std::isfinite(v) ? "a value beyond +-65504" : "a value that is not finite") + "; nothing was written");
}

std::vector<uint8_t> encode_tensor(const Tensor& values, uint32_t type) {
  const Tensor f = values.dtype == DType::F32 ? values : values.to_f32();
  const int64_t n = f.numel();
  const float* x = f.f32();
  std::vector<uint8_t> out(gguf_tensor_bytes(type, static_cast<uint64_t>(n)));
  switch (type) {
    case kGgmlF32: std::memcpy(out.data(), x, out.size()); break;
    case kGgmlF16:
    case kGgmlBF16:
      for (int64_t i = 0; i < n; ++i) {
        const uint16_t h = type == kGgmlF16 ? f32_to_f16(x[i]) : f32_to_bf16(x[i]);
        std::memcpy(out.data() + 2 * i, &h, 2);
      }
      break;
    case kGgmlQ8_0: quantize_q8_0(x, n, out.data()); break;
    case kGgmlQ4_0: quantize_q4_0(x, n, out.data()); break;
    default: throw Error("GGUF writer: type " + ggml_type_name(type) + " is not written");
  }
  return out;
}

}  // namespace ordo
