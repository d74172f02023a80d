// The position-scheme registry (one line per scheme), the scaling-name table, and the helpers every
// scheme shares.
#include <cctype>
#include <cmath>
#include <cstdio>

#include "internal.hpp"

// The registry: one line per scheme. Each scheme's file defines
// `const PositionSchemeInfo& scheme_<name>()` (name, scalings, weights, factory).
#define ORDO_POSITION_SCHEMES(X) \
  X(none)                        \
  X(learned)                     \
  X(sinusoidal)                  \
  X(relative)                    \
  X(rope)                        \
  X(alibi)

namespace ordo {
namespace position_detail {

#define ORDO_DECLARE_SCHEME(n) const PositionSchemeInfo& scheme_##n();
ORDO_POSITION_SCHEMES(ORDO_DECLARE_SCHEME)
#undef ORDO_DECLARE_SCHEME

namespace {

struct ScalingEntry {
  const char* name;
  ScalingType type;
};

// Canonical names first (scaling_name returns them); aliases after.
const ScalingEntry kScalings[] = {
    {"none", ScalingType::None},         {"linear", ScalingType::Linear}, {"ntk", ScalingType::NTK},
    {"dynamic", ScalingType::Dynamic},   {"yarn", ScalingType::YaRN},     {"llama3", ScalingType::Llama3},
    {"longrope", ScalingType::LongRoPE}, {"default", ScalingType::None},  // HF rope_type "default"
    {"su", ScalingType::LongRoPE},                                        // early Phi-3 configs
};

std::string join_names() {
  std::string out;
  for (const PositionSchemeInfo* e : position_schemes()) out += (out.empty() ? "" : ", ") + std::string(e->name);
  return out;
}

}  // namespace

void require_scaling(const PositionSchemeInfo& scheme, const Scaling& s) {
  if (!scheme.supports(s.type)) {
    std::string list = scaling_name(ScalingType::None);
    for (const ScalingSupport& t : scheme.scalings) list += ", " + std::string(scaling_name(t.type));
    throw Error(std::string(scheme.name) + " does not support " + scaling_name(s.type) +
                " scaling; supported: " + list);
  }
  if (s.type != ScalingType::None && !(s.factor > 0.0 && s.factor <= kMaxScalingFactor))
    throw Error(std::string(scheme.name) + ": " + scaling_name(s.type) + " scaling needs a factor in (0, " +
                num_str(kMaxScalingFactor) + "], got " + num_str(s.factor));
}

Tensor as_f32(const Tensor& t, const char* what) {
  if (t.dtype == DType::F32) return t;
  if (t.dtype == DType::I8 || is_block_dtype(t.dtype))
    throw Error(std::string(what) + ": " + dtype_name(t.dtype) + " position weights are not supported");
  return t.to_f32();
}

std::string num_str(double v) {
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

std::string ContextExtension::describe() const {
  if (self_extend()) return "self-extend G=" + std::to_string(group) + " W=" + std::to_string(neighbor);
  if (streaming()) return "sinks K=" + std::to_string(sinks) + " N=" + std::to_string(window);
  return "none";
}

void check_context_extension(const ContextExtension& e) {
  const std::string max = std::to_string(kMaxExtensionValue);
  auto in_range = [&](int64_t v, int64_t lo, const char* what) {
    if (v < lo || v > kMaxExtensionValue)
      throw Error(std::string(what) + " must be in [" + std::to_string(lo) + ", " + max + "], got " +
                  std::to_string(v));
  };
  if (e.group != 0 || e.neighbor != 0) {
    in_range(e.group, 1, "self-extend (--self-extend G,W): the group size G");
    in_range(e.neighbor, 1, "self-extend (--self-extend G,W): the neighbour window W");
  }
  if (e.window != 0 || e.sinks != 0) {
    in_range(e.sinks, 0, "sinks (--sinks K): the number of sink tokens K");
    in_range(e.window, 1, "sinks (--window N): the recent-token window N");
  }
  if (e.self_extend() && e.streaming())
    throw Error("self-extend (--self-extend) and sinks (--sinks/--window) cannot be combined; choose one");
}

bool PositionSchemeInfo::supports(ScalingType t) const {
  if (t == ScalingType::None) return true;
  for (const ScalingSupport& s : scalings)
    if (s.type == t) return true;
  return false;
}

const std::vector<const PositionSchemeInfo*>& position_schemes() {
#define ORDO_LIST_SCHEME(n) &position_detail::scheme_##n(),
  static const std::vector<const PositionSchemeInfo*> all = {ORDO_POSITION_SCHEMES(ORDO_LIST_SCHEME)};
#undef ORDO_LIST_SCHEME
  return all;
}

const PositionSchemeInfo& position_scheme_info(const std::string& name) {
  for (const PositionSchemeInfo* e : position_schemes())
    if (name == e->name) return *e;
  throw Error("unknown position scheme '" + name + "'; known: " + position_detail::join_names());
}

std::vector<std::string> position_scheme_names() {
  std::vector<std::string> out;
  for (const PositionSchemeInfo* e : position_schemes()) out.emplace_back(e->name);
  return out;
}

std::unique_ptr<PositionScheme> make_position_scheme(const PositionConfig& cfg, const PositionContext& ctx,
                                                     const PositionWeights& weights) {
  const PositionSchemeInfo& info = position_scheme_info(cfg.scheme);
  position_detail::require_scaling(info, cfg.scaling);
  return info.make(cfg, ctx, weights);
}

const Tensor& PositionWeights::get(const std::string& name) const {
  static const Tensor kAbsent;
  const auto it = tensors.find(name);
  return it == tensors.end() ? kAbsent : it->second;
}

}  // namespace ordo
