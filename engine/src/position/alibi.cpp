// ALiBi: scores[j] += -slope_h * distance, distance = qpos - kpos (causal) or |qpos - kpos|
// (bidirectional). Uses the real query position, so a 1-token decode step still gets its bias.
// Slopes: with c = 2^floor(log2 n), m0 = 2^(-max_bias/c), m1 = 2^(-(max_bias/2)/c),
// slope_h = h < c ? m0^(h+1) : m1^(2(h-c)+1). This is BLOOM's build_alibi_tensor and ggml's rule;
// MPT's build_mpt_alibi_tensor (2^ceil(log2 n) slopes, then [1::2] + [::2], first n) yields exactly
// the same list for every n (its odd-indexed slopes are the c-set, its even-indexed ones the
// m1 powers), so one convention serves both. Linear scaling s: slopes / s. No 1/sqrt(d) here.
#include <cmath>
#include <vector>

#include "internal.hpp"

namespace ordo {

std::vector<float> alibi_slopes(int64_t n_heads, double max_bias) {
  if (n_heads <= 0) throw Error("alibi needs n_heads > 0, got " + std::to_string(n_heads));
  int64_t c = 1;
  while (c * 2 <= n_heads) c *= 2;
  std::vector<float> out(static_cast<size_t>(n_heads));
  const double cd = static_cast<double>(c);
  for (int64_t h = 0; h < n_heads; ++h) {
    // m0^(h+1) = 2^(-max_bias (h+1) / c);  m1^(2(h-c)+1) = 2^(-(max_bias/2)(2(h-c)+1) / c)
    const double e = h < c ? max_bias * static_cast<double>(h + 1) / cd
                           : (max_bias / 2.0) * static_cast<double>(2 * (h - c) + 1) / cd;
    out[h] = static_cast<float>(std::exp2(-e));
  }
  return out;
}

namespace position_detail {
namespace {

class Alibi final : public PositionScheme {
 public:
  Alibi(const PositionConfig& cfg, const PositionContext& ctx) : causal_(ctx.causal) {
    if (ctx.n_heads <= 0) throw Error("alibi needs the attention's head count (n_heads > 0)");
    if (!(std::isfinite(cfg.alibi_max_bias) && cfg.alibi_max_bias > 0.0))
      throw Error("alibi max_bias must be > 0, got " + num_str(cfg.alibi_max_bias));
    slopes_ = alibi_slopes(ctx.n_heads, cfg.alibi_max_bias);
    if (cfg.scaling.type == ScalingType::Linear)
      for (float& m : slopes_) m = static_cast<float>(static_cast<double>(m) / cfg.scaling.factor);
  }

  const char* name() const override { return "alibi"; }
  bool has_score_bias() const override { return true; }

  void add_score_bias(float* scores, int64_t head, int32_t qpos, const int32_t* kpos, int64_t nk) const override {
    const float m = slopes_[static_cast<size_t>(head)];
    for (int64_t j = 0; j < nk; ++j) {
      int64_t dist = static_cast<int64_t>(qpos) - kpos[j];
      if (!causal_ && dist < 0) dist = -dist;
      scores[j] -= m * static_cast<float>(dist);
    }
  }

 private:
  bool causal_;
  std::vector<float> slopes_;
};

}  // namespace

const PositionSchemeInfo& scheme_alibi() {
  static const PositionSchemeInfo info = {
      "alibi",
      "attention scores",
      {{ScalingType::Linear, true}},
      {},
      [](const PositionConfig& cfg, const PositionContext&) { return "max_bias " + num_str(cfg.alibi_max_bias); },
      [](const PositionConfig& cfg, const PositionContext& ctx,
         const PositionWeights&) -> std::unique_ptr<PositionScheme> { return std::make_unique<Alibi>(cfg, ctx); },
  };
  return info;
}

}  // namespace position_detail
}  // namespace ordo
