// Fixed sinusoidal positions (Transformer, Marian). With angle_i(p) = p / 10000^(2i/d):
//   Concat (HF MarianSinusoidalPositionalEmbedding): [sin(angle_0..) | cos(angle_0..)], the sin half
//     has ceil(d/2) entries and the cos half floor(d/2);
//   Interleaved (original Transformer): pe[2i] = sin(angle_i), pe[2i+1] = cos(angle_i).
// Computed in double and rounded to float, as HF does (numpy float64, then FloatTensor).
// Linear scaling s: p' = p / s (positions squeezed into the trained range). No length limit.
#include <algorithm>
#include <cmath>
#include <vector>

#include "internal.hpp"

namespace ordo::position_detail {
namespace {

constexpr int64_t kTableCap = 4096;  // positions precomputed; later ones are computed per call

class Sinusoidal final : public PositionScheme {
 public:
  Sinusoidal(const PositionConfig& cfg, const PositionContext& ctx) : d_(ctx.d_model), layout_(cfg.sinusoidal_layout) {
    if (d_ <= 0) throw Error("sinusoidal positions need d_model > 0");
    scale_ = cfg.scaling.type == ScalingType::Linear ? 1.0 / cfg.scaling.factor : 1.0;
    denom_.resize(static_cast<size_t>((d_ + 1) / 2));
    for (int64_t i = 0; i < static_cast<int64_t>(denom_.size()); ++i)
      denom_[i] = std::pow(10000.0, 2.0 * static_cast<double>(i) / static_cast<double>(d_));
    cap_ = cfg.max_positions > 0 ? std::min(cfg.max_positions, kTableCap) : 1024;
    table_.resize(static_cast<size_t>(cap_ * d_));
    for (int64_t p = 0; p < cap_; ++p) fill(p, table_.data() + p * d_);
  }

  const char* name() const override { return "sinusoidal"; }

  bool embeds() const override { return true; }
  void embed(float* x, const int32_t* pos, int64_t T) const override {
    std::vector<float> tmp;
    for (int64_t t = 0; t < T; ++t) {
      const float* pe;
      if (pos[t] >= 0 && pos[t] < cap_) {
        pe = table_.data() + pos[t] * d_;
      } else {
        tmp.resize(static_cast<size_t>(d_));
        fill(pos[t], tmp.data());
        pe = tmp.data();
      }
      float* xt = x + t * d_;
      for (int64_t i = 0; i < d_; ++i) xt[i] += pe[i];
    }
  }

 private:
  void fill(int64_t p, float* out) const {
    const double pp = static_cast<double>(p) * scale_;
    if (layout_ == SinusoidalLayout::Concat) {
      const int64_t n_sin = (d_ + 1) / 2, n_cos = d_ / 2;
      for (int64_t i = 0; i < n_sin; ++i) out[i] = static_cast<float>(std::sin(pp / denom_[i]));
      for (int64_t i = 0; i < n_cos; ++i) out[n_sin + i] = static_cast<float>(std::cos(pp / denom_[i]));
    } else {
      for (int64_t j = 0; j < d_; ++j) {
        const double a = pp / denom_[j / 2];
        out[j] = static_cast<float>(j % 2 == 0 ? std::sin(a) : std::cos(a));
      }
    }
  }

  int64_t d_;
  SinusoidalLayout layout_;
  double scale_ = 1.0;
  std::vector<double> denom_;  // 10000^(2i/d)
  int64_t cap_ = 0;
  std::vector<float> table_;  // [cap_, d_]
};

}  // namespace

const PositionSchemeInfo& scheme_sinusoidal() {
  static const PositionSchemeInfo info = {
      "sinusoidal",
      "input embeddings",
      {{ScalingType::Linear, true}},
      {},
      [](const PositionConfig& cfg, const PositionContext&) {
        return std::string(cfg.sinusoidal_layout == SinusoidalLayout::Concat ? "sin|cos" : "interleaved");
      },
      [](const PositionConfig& cfg, const PositionContext& ctx,
         const PositionWeights&) -> std::unique_ptr<PositionScheme> { return std::make_unique<Sinusoidal>(cfg, ctx); },
  };
  return info;
}

}  // namespace ordo::position_detail
