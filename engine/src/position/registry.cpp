// The position-scheme registry: one line per scheme. Also the scaling-name table and the
// helpers every scheme shares.
#include <cctype>
#include <cmath>
#include <cstdio>

#include "internal.hpp"

namespace ordo {
namespace position_detail {
namespace {

struct Entry {
  const char* name;
  Factory make;
};

// A new scheme: one file under engine/src/position/ and one line here.
const Entry kSchemes[] = {
    {"none", make_none},
    {"learned", make_learned},
    {"sinusoidal", make_sinusoidal},
    {"relative", make_relative},
    {"rope", make_rope},
    {"alibi", make_alibi},
};

struct ScalingEntry {
  const char* name;
  ScalingType type;
};

// Canonical names first (scaling_name returns them); aliases after.
const ScalingEntry kScalings[] = {
    {"none", ScalingType::None},     {"linear", ScalingType::Linear}, {"ntk", ScalingType::NTK},
    {"dynamic", ScalingType::Dynamic}, {"yarn", ScalingType::YaRN},     {"llama3", ScalingType::Llama3},
    {"longrope", ScalingType::LongRoPE},
    {"default", ScalingType::None},  // HF rope_type "default"
    {"su", ScalingType::LongRoPE},   // early Phi-3 configs
};

std::string join_names() {
  std::string out;
  for (const auto& e : kSchemes) out += (out.empty() ? "" : ", ") + std::string(e.name);
  return out;
}

}  // namespace

void require_scaling(const char* scheme, const Scaling& s, std::initializer_list<ScalingType> supported) {
  bool ok = false;
  for (ScalingType t : supported) ok = ok || t == s.type;
  if (!ok) {
    std::string list;
    for (ScalingType t : supported) list += (list.empty() ? "" : ", ") + std::string(scaling_name(t));
    throw Error(std::string(scheme) + " does not support " + scaling_name(s.type) +
                " scaling; supported: " + list);
  }
  if (s.type != ScalingType::None && !(s.factor > 0.0 && s.factor <= kMaxScalingFactor))
    throw Error(std::string(scheme) + ": " + scaling_name(s.type) + " scaling needs a factor in (0, " +
                fmt(kMaxScalingFactor) + "], got " + fmt(s.factor));
}

Tensor as_f32(const Tensor& t, const char* what) {
  if (t.dtype == DType::F32) return t;
  if (t.dtype == DType::I8) throw Error(std::string(what) + ": int8 position weights are not supported");
  return t.to_f32();
}

std::string fmt(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

}  // namespace position_detail

const char* scaling_name(ScalingType t) {
  for (const auto& e : position_detail::kScalings)
    if (e.type == t) return e.name;
  return "?";
}

ScalingType parse_scaling(const std::string& name) {
  std::string lower;
  for (char c : name) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const auto& e : position_detail::kScalings)
    if (lower == e.name) return e.type;
  std::string known;
  for (const auto& e : position_detail::kScalings) known += (known.empty() ? "" : ", ") + std::string(e.name);
  throw Error("unknown position scaling '" + name + "'; known: " + known);
}

std::unique_ptr<PositionScheme> make_position_scheme(const PositionConfig& cfg, const PositionContext& ctx,
                                                     const PositionWeights& weights) {
  for (const auto& e : position_detail::kSchemes)
    if (cfg.scheme == e.name) return e.make(cfg, ctx, weights);
  throw Error("unknown position scheme '" + cfg.scheme + "'; known: " + position_detail::join_names());
}

std::vector<std::string> position_scheme_names() {
  std::vector<std::string> out;
  for (const auto& e : position_detail::kSchemes) out.emplace_back(e.name);
  return out;
}

}  // namespace ordo
