// Learned absolute positions: x[t] += table[pos[t] + offset] (GPT-2, BERT, OPT with offset 2).
// Linear scaling s interpolates the table to s times its length: position p reads the table at
// p/s, linearly between neighbouring rows (p/s past the last row reads the last row). The first
// `offset` rows (OPT/BART's reserved rows) are not positions and are kept as they are.
#include <cmath>
#include <cstring>

#include "internal.hpp"

namespace ordo::position_detail {
namespace {

class Learned final : public PositionScheme {
 public:
  Learned(const PositionConfig& cfg, const PositionContext& ctx, const PositionWeights& w)
      : offset_(cfg.learned_offset), scaling_(cfg.scaling) {
    const Tensor& table = w.get("table");
    if (table.empty())
      throw Error(
          "the model has no learned position table; a 'learned' position scheme needs the position "
          "embedding weight [rows, d_model]");
    if (table.ndim() != 2) throw Error("learned position table must be 2-D, got " + table.shape_str());
    table_ = as_f32(table, "learned position table");
    rows_ = table_.dim(0);
    d_ = table_.dim(1);
    if (ctx.d_model > 0 && d_ != ctx.d_model)
      throw Error("learned position table is " + table_.shape_str() + " but d_model is " + std::to_string(ctx.d_model));
    if (offset_ < 0 || offset_ >= rows_)
      throw Error("learned position offset " + std::to_string(offset_) + " does not fit a table of " +
                  std::to_string(rows_) + " rows");
    trained_ = positions_ = rows_ - offset_;
    if (cfg.scaling.type == ScalingType::Linear) interpolate(cfg.scaling.factor);
  }

  const char* name() const override { return "learned"; }

  void check_positions(int64_t max_pos) const override {
    if (max_pos < positions_) return;
    const double need = std::ceil(static_cast<double>(max_pos + 1) / trained_ * 100.0) / 100.0;
    std::string msg = "the sequence is longer than the learned position table: it needs " +
                      std::to_string(max_pos + 1) + " positions (0.." + std::to_string(max_pos) +
                      ") but the table has " + std::to_string(trained_) + " positions";
    if (offset_ > 0)
      msg +=
          " (" + std::to_string(trained_ + offset_) + " rows, looked up at position + " + std::to_string(offset_) + ")";
    if (scaling_.type == ScalingType::Linear)
      msg += ", " + std::to_string(positions_) + " after linear interpolation by " + num_str(scaling_.factor) +
             "; interpolate further with --scaling linear --factor " + num_str(need);
    else
      msg += "; interpolate the table to the needed length with --scaling linear --factor " + num_str(need);
    throw Error(msg);
  }

  bool embeds() const override { return true; }
  void embed(float* x, const int32_t* pos, int64_t T) const override {
    const float* tab = table_.f32();
    for (int64_t t = 0; t < T; ++t) {
      if (pos[t] < 0 || pos[t] >= positions_) {
        if (pos[t] < 0) throw Error("learned positions: negative position " + std::to_string(pos[t]));
        check_positions(pos[t]);
      }
      const float* row = tab + (pos[t] + offset_) * d_;
      float* xt = x + t * d_;
      for (int64_t i = 0; i < d_; ++i) xt[i] += row[i];
    }
  }

 private:
  void interpolate(double s) {
    const int64_t trained = trained_;
    const int64_t n = static_cast<int64_t>(std::floor(s * static_cast<double>(trained) + 1e-9));
    if (n < 1) throw Error("learned: linear factor " + num_str(s) + " leaves no positions");
    Tensor out = Tensor::zeros({offset_ + n, d_});
    const float* src = table_.f32();
    float* dst = out.f32();
    std::memcpy(dst, src, static_cast<size_t>(offset_ * d_) * sizeof(float));
    for (int64_t p = 0; p < n; ++p) {
      const double at = static_cast<double>(p) / s;
      int64_t i0 = static_cast<int64_t>(std::floor(at));
      double frac = at - static_cast<double>(i0);
      if (i0 >= trained - 1) i0 = trained - 1, frac = 0.0;
      const float* r0 = src + (offset_ + i0) * d_;
      const float* r1 = frac > 0.0 ? r0 + d_ : r0;
      float* o = dst + (offset_ + p) * d_;
      for (int64_t i = 0; i < d_; ++i) o[i] = static_cast<float>((1.0 - frac) * r0[i] + frac * r1[i]);
    }
    table_ = std::move(out);
    rows_ = offset_ + n;
    positions_ = n;
  }

  Tensor table_;
  int64_t rows_ = 0, d_ = 0, offset_ = 0;
  int64_t trained_ = 0;    // positions in the checkpoint's table
  int64_t positions_ = 0;  // positions embed() can serve (after interpolation)
  Scaling scaling_;
};

}  // namespace

const PositionSchemeInfo& scheme_learned() {
  static const PositionSchemeInfo info = {
      "learned",
      "input embeddings",
      {{ScalingType::Linear, true}},
      {{"table", "[rows, d_model]"}},
      [](const PositionConfig& cfg, const PositionContext&) {
        return cfg.learned_offset ? "offset " + std::to_string(cfg.learned_offset) : std::string();
      },
      [](const PositionConfig& cfg, const PositionContext& ctx, const PositionWeights& w)
          -> std::unique_ptr<PositionScheme> { return std::make_unique<Learned>(cfg, ctx, w); },
  };
  return info;
}

}  // namespace ordo::position_detail
