// RoPE inverse frequencies and attention scaling for every ScalingType, reproducing HF
// transformers' `modeling_rope_utils` in float32 (its tensors are float32; Python scalars are
// cast to float32 when they meet a tensor), so inv_freq matches HF to the last bit or two.
//
//   None     inv_i = 1 / base^(2i/d)                                 (d = rotary dim)
//   Linear   inv_i / s                                               (positions / s, PI)
//   NTK      base' = base * s^(d/(d-2)), then default                (static NTK-aware)
//   Dynamic  L = seq_len; if L > L0: base' = base*((s*L/L0) - (s-1))^(d/(d-2)) (double, then float32),
//            else default.
//            L0 = original_max_positions or max_positions. The base is always >= base (s > 0).
//   YaRN     corr_dim(r) = d*ln(L0/(2*pi*r)) / (2 ln base); low = floor(corr_dim(beta_fast)),
//            high = ceil(corr_dim(beta_slow)) (no floor/ceil when truncate = false), clamped to
//            [0, d-1]; ramp_i = clamp((i-low)/(high-low), 0, 1); e = 1 - ramp;
//            inv = (inv/s)*(1-e) + inv*e. attention = attention_factor, else
//            mscale(s, mscale)/mscale(s, mscale_all_dim) when both are given (DeepSeek), else
//            mscale(s) = 0.1 ln s + 1 (1 for s <= 1).
//   Llama3   wavelen = 2pi/inv; keep when wavelen < L0/hff, inv/s when wavelen > L0/lff, otherwise
//            sm = (L0/wavelen - lff)/(hff - lff), inv = (1-sm)*inv/s + sm*inv.
//   LongRoPE inv_i = 1/(f_i * base^(2i/d)), f = short_factor when seq_len <= L0, long_factor above.
//            attention = short_mscale/long_mscale for the chosen regime when given, else
//            attention_factor, else sqrt(1 + ln r / ln L0) with r = max_positions / L0 (1 if r <= 1);
//            without original_max_positions, L0 = max_positions and r = factor.
#include <algorithm>
#include <cmath>

#include "internal.hpp"

namespace ordo {
namespace {

using position_detail::num_str;

constexpr double kPi = 3.14159265358979323846;

// HF: base ** (torch.arange(0, dim, 2).float() / dim), in float32.
std::vector<float> pos_freqs(float base, int64_t d) {
  std::vector<float> p(static_cast<size_t>(d / 2));
  for (int64_t i = 0; i < d / 2; ++i) {
    const float e = static_cast<float>(2 * i) / static_cast<float>(d);
    p[i] = std::pow(base, e);
  }
  return p;
}

std::vector<float> default_inv(float base, int64_t d) {
  std::vector<float> inv = pos_freqs(base, d);
  for (float& v : inv) v = 1.0f / v;
  return inv;
}

// PyTorch rounds every elementwise product to float32 before the following add. With -mfma the
// compiler may fuse a*b + c into one fma and change the last bit; this forces the rounding.
// (Only used in the once-per-config inv_freq computations, never in hot loops.)
float rounded(float x) {
  volatile float v = x;
  return v;
}

double yarn_mscale(double s, double m) { return s <= 1.0 ? 1.0 : 0.1 * m * std::log(s) + 1.0; }

int64_t original_length(const PositionConfig& cfg, const char* what) {
  const int64_t L0 = cfg.scaling.original_max_positions > 0 ? cfg.scaling.original_max_positions : cfg.max_positions;
  if (L0 <= 0)
    throw Error(std::string("rope: ") + what +
                " scaling needs the trained length (max_positions or original_max_positions > 0)");
  return L0;
}

}  // namespace

namespace {

// Each scaling type's frequencies for rotary dim d at sequence length seq_len; s = cfg.scaling.factor.

void dynamic_ntk(const PositionConfig& cfg, int64_t d, int64_t seq_len, RopeFrequencies& out) {
  const double s = cfg.scaling.factor;
  if (d <= 2) throw Error("rope: dynamic scaling needs a rotary dim > 2");
  const int64_t L0 = original_length(cfg, "dynamic");
  if (seq_len <= L0) {
    out.inv_freq = default_inv(static_cast<float>(cfg.rope_theta), d);
    return;
  }
  // base * ((factor * seq_len / max_pos) - (factor - 1)) ** (dim / (dim - 2)), with the Python
  // scalars in double and the result rounded to float32 (bit-exact with the HF fixture).
  const double grow = s * static_cast<double>(seq_len) / static_cast<double>(L0) - (s - 1.0);
  const float b =
      static_cast<float>(cfg.rope_theta * std::pow(grow, static_cast<double>(d) / static_cast<double>(d - 2)));
  if (!(b > 0.0f) || !std::isfinite(b))
    throw Error("rope: dynamic scaling produced base " + num_str(b) + " for length " + std::to_string(seq_len));
  out.inv_freq = default_inv(b, d);
}

void yarn(const PositionConfig& cfg, int64_t d, RopeFrequencies& out) {
  const Scaling& sc = cfg.scaling;
  const double s = sc.factor;
  const int64_t L0 = original_length(cfg, "yarn");
  auto corr_dim = [&](double rot) {
    return static_cast<double>(d) * std::log(static_cast<double>(L0) / (rot * 2.0 * kPi)) /
           (2.0 * std::log(cfg.rope_theta));
  };
  double low = corr_dim(sc.beta_fast), high = corr_dim(sc.beta_slow);
  if (sc.truncate) low = std::floor(low), high = std::ceil(high);
  low = std::max(low, 0.0);
  high = std::min(high, static_cast<double>(d - 1));
  if (low == high) high += 0.001;  // HF: prevent singularity
  const std::vector<float> pf = pos_freqs(static_cast<float>(cfg.rope_theta), d);
  const float fs = static_cast<float>(s), flow = static_cast<float>(low), frange = static_cast<float>(high - low);
  const int64_t half = d / 2;
  out.inv_freq.resize(static_cast<size_t>(half));
  for (int64_t i = 0; i < half; ++i) {
    const float extrap = 1.0f / pf[i];
    const float interp = 1.0f / (fs * pf[i]);
    const float ramp = std::clamp((static_cast<float>(i) - flow) / frange, 0.0f, 1.0f);
    const float e = 1.0f - ramp;
    out.inv_freq[i] = rounded(interp * (1.0f - e)) + rounded(extrap * e);
  }
  if (sc.attention_factor)
    out.attention_scaling = *sc.attention_factor;
  else if (sc.mscale && sc.mscale_all_dim && *sc.mscale != 0.0 && *sc.mscale_all_dim != 0.0)
    out.attention_scaling = yarn_mscale(s, *sc.mscale) / yarn_mscale(s, *sc.mscale_all_dim);
  else
    out.attention_scaling = yarn_mscale(s, 1.0);
}

void llama3(const PositionConfig& cfg, int64_t d, RopeFrequencies& out) {
  const Scaling& sc = cfg.scaling;
  const int64_t L0 = original_length(cfg, "llama3");
  const double lff = sc.low_freq_factor, hff = sc.high_freq_factor;
  if (!(lff > 0.0 && hff > lff))
    throw Error("rope: llama3 scaling needs 0 < low_freq_factor < high_freq_factor, got " + num_str(lff) + " and " +
                num_str(hff));
  const float lo_wavelen = static_cast<float>(static_cast<double>(L0) / lff);
  const float hi_wavelen = static_cast<float>(static_cast<double>(L0) / hff);
  const float fs = static_cast<float>(sc.factor);
  out.inv_freq = default_inv(static_cast<float>(cfg.rope_theta), d);
  for (float& inv : out.inv_freq) {
    const float wavelen = static_cast<float>(2.0 * kPi) / inv;
    if (wavelen < hi_wavelen) continue;
    if (wavelen > lo_wavelen) {
      inv = inv / fs;
      continue;
    }
    const float sm = (static_cast<float>(L0) / wavelen - static_cast<float>(lff)) / static_cast<float>(hff - lff);
    inv = rounded((1.0f - sm) * inv / fs) + rounded(sm * inv);
  }
}

void longrope(const PositionConfig& cfg, int64_t d, int64_t seq_len, RopeFrequencies& out) {
  const Scaling& sc = cfg.scaling;
  const int64_t L0 = original_length(cfg, "longrope");
  const int64_t half = d / 2;
  if (static_cast<int64_t>(sc.short_factor.size()) != half || static_cast<int64_t>(sc.long_factor.size()) != half)
    throw Error("rope: longrope needs short_factor and long_factor with rotary_dim/2 = " + std::to_string(half) +
                " values each, got " + std::to_string(sc.short_factor.size()) + " and " +
                std::to_string(sc.long_factor.size()));
  const bool use_long = seq_len > L0;
  const std::vector<double>& f = use_long ? sc.long_factor : sc.short_factor;
  const std::vector<float> pf = pos_freqs(static_cast<float>(cfg.rope_theta), d);
  out.inv_freq.resize(static_cast<size_t>(half));
  for (int64_t i = 0; i < half; ++i) {
    if (!(f[i] > 0.0)) throw Error("rope: longrope factors must be > 0, got " + num_str(f[i]));
    out.inv_freq[i] = 1.0f / (static_cast<float>(f[i]) * pf[i]);
  }
  const std::optional<double>& regime = use_long ? sc.long_mscale : sc.short_mscale;
  if (regime) {
    out.attention_scaling = *regime;
  } else if (sc.attention_factor) {
    out.attention_scaling = *sc.attention_factor;
  } else {
    // A floating ratio: integer division would turn 80 / 32 into 2 and understate the magnitude.
    const double r =
        sc.original_max_positions > 0 ? static_cast<double>(cfg.max_positions) / static_cast<double>(L0) : sc.factor;
    out.attention_scaling = r <= 1.0 ? 1.0 : std::sqrt(1.0 + std::log(r) / std::log(static_cast<double>(L0)));
  }
}

}  // namespace

RopeFrequencies rope_frequencies(const PositionConfig& cfg, int64_t d, int64_t seq_len) {
  const Scaling& sc = cfg.scaling;
  if (d <= 0 || d % 2 != 0) throw Error("rope: rotary dim must be even and > 0, got " + std::to_string(d));
  if (!(std::isfinite(cfg.rope_theta) && cfg.rope_theta > 1.0))
    throw Error("rope: rope_theta must be > 1, got " + num_str(cfg.rope_theta));
  position_detail::require_scaling(position_scheme_info("rope"), sc);
  if (seq_len <= 0) seq_len = cfg.max_positions;
  const float base = static_cast<float>(cfg.rope_theta);
  RopeFrequencies out;
  switch (sc.type) {
    case ScalingType::None: out.inv_freq = default_inv(base, d); break;
    case ScalingType::Linear:
      out.inv_freq = default_inv(base, d);
      for (float& v : out.inv_freq) v /= static_cast<float>(sc.factor);
      break;
    case ScalingType::NTK: {
      if (d <= 2) throw Error("rope: ntk scaling needs a rotary dim > 2");
      const double b = cfg.rope_theta * std::pow(sc.factor, static_cast<double>(d) / static_cast<double>(d - 2));
      out.inv_freq = default_inv(static_cast<float>(b), d);
      break;
    }
    case ScalingType::Dynamic: dynamic_ntk(cfg, d, seq_len, out); break;
    case ScalingType::YaRN: yarn(cfg, d, out); break;
    case ScalingType::Llama3: llama3(cfg, d, out); break;
    case ScalingType::LongRoPE: longrope(cfg, d, seq_len, out); break;
  }
  return out;
}

}  // namespace ordo
