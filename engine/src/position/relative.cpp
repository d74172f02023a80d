// T5 relative position bias: scores[j] += table[bucket(kpos[j] - qpos)][head].
// Buckets follow HF `_relative_position_bucket` (bidirectional for encoders, causal for decoder
// self-attention); the log branch is evaluated only for distances >= max_exact, in float32 like HF.
// Linear scaling s: the distance is divided by s before bucketing (sign kept, |rp| floored).
// T5's missing 1/sqrt(d) is the model spec's business, not this scheme's.
#include <algorithm>
#include <cmath>
#include <vector>

#include "internal.hpp"

namespace ordo {

int64_t t5_relative_bucket(int64_t rp, bool bidirectional, int64_t num_buckets, int64_t max_distance) {
  int64_t bucket = 0, nb = num_buckets, n;
  if (bidirectional) {
    nb /= 2;
    if (rp > 0) bucket += nb;
    n = rp < 0 ? -rp : rp;
  } else {
    n = -std::min<int64_t>(rp, 0);
  }
  const int64_t max_exact = nb / 2;
  if (n < max_exact) return bucket + n;
  // HF: max_exact + (log(n.float() / max_exact) / math.log(max_distance / max_exact) * (nb - max_exact)).long()
  const float ratio = static_cast<float>(n) / static_cast<float>(max_exact);
  const float denom = static_cast<float>(std::log(static_cast<double>(max_distance) / static_cast<double>(max_exact)));
  const float v = std::log(ratio) / denom * static_cast<float>(nb - max_exact);
  const int64_t large = std::min<int64_t>(max_exact + static_cast<int64_t>(v), nb - 1);
  return bucket + large;
}

namespace position_detail {
namespace {

class Relative final : public PositionScheme {
 public:
  Relative(const PositionConfig& cfg, const PositionContext& ctx, const PositionWeights& w) {
    const Tensor& bias = w.get("relative_bias");
    if (bias.empty())
      throw Error(
          "the model has no relative attention bias table; a 'relative' (T5) position scheme needs "
          "its bias table [num_buckets, n_heads]");
    if (bias.ndim() != 2)
      throw Error("relative attention bias must be 2-D [num_buckets, n_heads], got " + bias.shape_str());
    if (cfg.num_buckets < 2 || cfg.max_distance < 1)
      throw Error("relative positions need num_buckets >= 2 and max_distance >= 1, got " +
                  std::to_string(cfg.num_buckets) + " and " + std::to_string(cfg.max_distance));
    Tensor table = as_f32(bias, "relative attention bias");
    if (table.dim(0) != cfg.num_buckets)
      throw Error("relative attention bias is " + table.shape_str() + " but num_buckets is " +
                  std::to_string(cfg.num_buckets));
    heads_ = table.dim(1);
    if (ctx.n_heads > 0 && heads_ != ctx.n_heads)
      throw Error("relative attention bias is " + table.shape_str() + " but the attention has " +
                  std::to_string(ctx.n_heads) + " heads");
    const double s = cfg.scaling.type == ScalingType::Linear ? cfg.scaling.factor : 1.0;
    // Beyond |rp| >= max_distance * s the bucket no longer changes, so a finite table covers all rp.
    reach_ = static_cast<int64_t>(std::ceil(static_cast<double>(cfg.max_distance) * s)) + 1;
    const int64_t width = 2 * reach_ + 1;
    lut_.resize(static_cast<size_t>(heads_ * width));
    const float* tab = table.f32();
    for (int64_t r = -reach_; r <= reach_; ++r) {
      int64_t rp = r;
      if (s != 1.0) {
        const int64_t mag = static_cast<int64_t>(std::floor(static_cast<double>(r < 0 ? -r : r) / s));
        rp = r < 0 ? -mag : mag;
      }
      const int64_t b = t5_relative_bucket(rp, !ctx.causal, cfg.num_buckets, cfg.max_distance);
      for (int64_t h = 0; h < heads_; ++h) lut_[h * width + (r + reach_)] = tab[b * heads_ + h];
    }
  }

  const char* name() const override { return "relative"; }
  bool has_score_bias() const override { return true; }

  void add_score_bias(float* scores, int64_t head, int32_t qpos, const int32_t* kpos, int64_t nk) const override {
    const float* row = lut_.data() + head * (2 * reach_ + 1) + reach_;
    for (int64_t j = 0; j < nk; ++j) {
      const int64_t rp = std::clamp<int64_t>(static_cast<int64_t>(kpos[j]) - qpos, -reach_, reach_);
      scores[j] += row[rp];
    }
  }

 private:
  int64_t heads_ = 0, reach_ = 0;
  std::vector<float> lut_;  // [heads, 2*reach+1]: bias per head and relative distance
};

}  // namespace

const PositionSchemeInfo& scheme_relative() {
  static const PositionSchemeInfo info = {
      "relative",
      "attention scores",
      {{ScalingType::Linear, true}},
      {{"relative_bias", "[num_buckets, n_heads]"}},
      [](const PositionConfig& cfg, const PositionContext&) {
        return std::to_string(cfg.num_buckets) + " buckets, max_distance " + std::to_string(cfg.max_distance);
      },
      [](const PositionConfig& cfg, const PositionContext& ctx, const PositionWeights& w)
          -> std::unique_ptr<PositionScheme> { return std::make_unique<Relative>(cfg, ctx, w); },
  };
  return info;
}

}  // namespace position_detail
}  // namespace ordo
