// Rotary position embedding. x: [T, n_heads_x, head_dim]; the first rotary_dim dims of each head
// rotate, the rest pass through (partial rotary: GPT-NeoX, GPT-J). Pairs are (x_i, x_{i+rd/2})
// (HalfSplit, HF rotate_half / NeoX) or (x_{2i}, x_{2i+1}) (Interleaved, GPT-J / Meta).
//   x'_a = x_a*cos - x_b*sin,  x'_b = x_b*cos + x_a*sin,  angle_i = float(pos) * inv_freq_i
// computed like HF: the angle is a float32 product, cos/sin are rounded to float32 and then
// multiplied by float32(attention_scaling). (The compiler may fuse x_a*cos - x_b*sin into an fma:
// a last-bit difference from PyTorch's separately rounded ops, far inside the 1e-4 tolerance.)
//
// Length dependence: dynamic NTK recomputes inv_freq from seq_len on every call (seq_len > L0);
// LongRoPE uses short_factor for seq_len <= L0 and long_factor above. Everything else is static.
// cos/sin are precomputed (immutable after construction, so concurrent rotate() calls are safe)
// for positions below min(max_positions, 8192); other positions are computed per call.
#include <algorithm>
#include <cmath>
#include <vector>

#include "internal.hpp"

namespace ordo::position_detail {
namespace {

constexpr int64_t kTableCap = 8192;

struct CosSin {
  std::vector<float> inv_freq;
  float scale = 1.0f;
  int64_t cap = 0;              // positions precomputed
  std::vector<float> cos, sin;  // [cap, half]

  CosSin() = default;
  CosSin(const RopeFrequencies& f, int64_t capacity)
      : inv_freq(f.inv_freq), scale(static_cast<float>(f.attention_scaling)), cap(capacity) {
    const size_t half = inv_freq.size();
    cos.resize(static_cast<size_t>(cap) * half);
    sin.resize(static_cast<size_t>(cap) * half);
    for (int64_t p = 0; p < cap; ++p) compute(static_cast<int32_t>(p), cos.data() + p * half, sin.data() + p * half);
  }

  void compute(int32_t pos, float* c, float* s) const {
    const float fp = static_cast<float>(pos);
    for (size_t i = 0; i < inv_freq.size(); ++i) {
      const float angle = fp * inv_freq[i];
      c[i] = static_cast<float>(std::cos(static_cast<double>(angle))) * scale;
      s[i] = static_cast<float>(std::sin(static_cast<double>(angle))) * scale;
    }
  }
};

class Rope final : public PositionScheme {
 public:
  Rope(const PositionConfig& cfg, const PositionContext& ctx) : cfg_(cfg), layout_(cfg.rope_layout) {
    head_dim_ = ctx.head_dim > 0 ? ctx.head_dim : (ctx.n_heads > 0 ? ctx.d_model / ctx.n_heads : 0);
    if (head_dim_ <= 0) throw Error("rope needs the head dimension (head_dim > 0)");
    rd_ = cfg.rotary_dim > 0 ? cfg.rotary_dim : head_dim_;
    if (rd_ > head_dim_ || rd_ % 2 != 0)
      throw Error("rope: rotary_dim " + std::to_string(rd_) + " must be even and at most head_dim " +
                  std::to_string(head_dim_));
    half_ = rd_ / 2;
    const int64_t cap = cfg.max_positions > 0 ? std::min(cfg.max_positions, kTableCap) : 2048;
    const ScalingType type = cfg.scaling.type;
    if (type == ScalingType::Dynamic || type == ScalingType::LongRoPE) {
      L0_ = cfg.scaling.original_max_positions > 0 ? cfg.scaling.original_max_positions : cfg.max_positions;
      if (L0_ <= 0)
        throw Error(std::string("rope: ") + scaling_name(type) +
                    " scaling needs the trained length (max_positions or original_max_positions > 0)");
    }
    if (type == ScalingType::LongRoPE) {
      main_ = CosSin(rope_frequencies(cfg, rd_, L0_), cap);      // short_factor
      long_ = CosSin(rope_frequencies(cfg, rd_, L0_ + 1), cap);  // long_factor
    } else {
      // Dynamic: the table holds the unscaled frequencies in effect up to L0.
      main_ = CosSin(rope_frequencies(cfg, rd_, type == ScalingType::Dynamic ? L0_ : 0), cap);
    }
  }

  const char* name() const override { return "rope"; }

  bool rotates() const override { return true; }

  // Queries and keys rotate alike.
  void rotate(float* x, RotateTarget, int64_t n_heads_x, const int32_t* pos, int64_t T,
              int64_t seq_len) const override {
    if (T <= 0) return;
    const ScalingType type = cfg_.scaling.type;
    if (seq_len <= 0 && (type == ScalingType::Dynamic || type == ScalingType::LongRoPE))
      seq_len = static_cast<int64_t>(*std::max_element(pos, pos + T)) + 1;
    const CosSin* cs = &main_;
    CosSin dynamic;  // per-call frequencies for dynamic NTK beyond L0 (no table)
    if (type == ScalingType::LongRoPE && seq_len > L0_) {
      cs = &long_;
    } else if (type == ScalingType::Dynamic && seq_len > L0_) {
      dynamic = CosSin(rope_frequencies(cfg_, rd_, seq_len), 0);
      cs = &dynamic;
    }

    std::vector<float> cbuf, sbuf;  // only for positions outside the table
    for (int64_t t = 0; t < T; ++t) {
      const float *c, *s;
      if (pos[t] >= 0 && pos[t] < cs->cap) {
        c = cs->cos.data() + pos[t] * half_;
        s = cs->sin.data() + pos[t] * half_;
      } else {
        cbuf.resize(static_cast<size_t>(half_));
        sbuf.resize(static_cast<size_t>(half_));
        cs->compute(pos[t], cbuf.data(), sbuf.data());
        c = cbuf.data();
        s = sbuf.data();
      }
      float* row = x + t * n_heads_x * head_dim_;
      for (int64_t h = 0; h < n_heads_x; ++h) {
        float* v = row + h * head_dim_;
        if (layout_ == RopeLayout::HalfSplit) {
          for (int64_t i = 0; i < half_; ++i) {
            const float a = v[i], b = v[i + half_];
            v[i] = a * c[i] - b * s[i];
            v[i + half_] = b * c[i] + a * s[i];
          }
        } else {
          for (int64_t i = 0; i < half_; ++i) {
            const float a = v[2 * i], b = v[2 * i + 1];
            v[2 * i] = a * c[i] - b * s[i];
            v[2 * i + 1] = b * c[i] + a * s[i];
          }
        }
      }
    }
  }

  bool rotation_changes(int64_t old_len, int64_t new_len) const override {
    switch (cfg_.scaling.type) {
      case ScalingType::LongRoPE: return (old_len > L0_) != (new_len > L0_);
      case ScalingType::Dynamic:
        return cfg_.scaling.dynamic_rerotate && std::max(old_len, L0_) != std::max(new_len, L0_);
      default: return false;
    }
  }

 private:
  PositionConfig cfg_;
  RopeLayout layout_;
  int64_t head_dim_ = 0, rd_ = 0, half_ = 0;
  int64_t L0_ = 0;  // dynamic / longrope: original length
  CosSin main_;     // static frequencies (LongRoPE: short_factor; dynamic: unscaled)
  CosSin long_;     // LongRoPE long_factor
};

}  // namespace

const PositionSchemeInfo& scheme_rope() {
  static const PositionSchemeInfo info = {
      "rope",
      "q/k rotation",
      {{ScalingType::Linear, true},
       {ScalingType::NTK, true},
       {ScalingType::Dynamic, true},
       {ScalingType::YaRN, true},
       {ScalingType::Llama3, false},     // low/high frequency factors around the original length
       {ScalingType::LongRoPE, false}},  // per-dimension factor lists
      {},
      [](const PositionConfig& cfg, const PositionContext& ctx) {
        return "theta " + num_str(cfg.rope_theta) + ", rotary_dim " +
               std::to_string(cfg.rotary_dim ? cfg.rotary_dim : ctx.head_dim) + ", " +
               (cfg.rope_layout == RopeLayout::HalfSplit ? "half-split" : "interleaved");
      },
      [](const PositionConfig& cfg, const PositionContext& ctx,
         const PositionWeights&) -> std::unique_ptr<PositionScheme> { return std::make_unique<Rope>(cfg, ctx); },
  };
  return info;
}

}  // namespace ordo::position_detail
