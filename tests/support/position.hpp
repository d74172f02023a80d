// Helpers shared by the position-scheme tests: building a scheme for a small attention shape,
// weights for it, and relative comparisons of RoPE frequencies.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "ordo/position.hpp"

namespace ordo::test {

inline std::unique_ptr<PositionScheme> make(const PositionConfig& cfg, const PositionContext& ctx,
                                            const PositionWeights& w = {}) {
  return make_position_scheme(cfg, ctx, w);
}

inline PositionContext ctx_of(int64_t d_model, int64_t n_heads, int64_t head_dim, bool causal = true) {
  PositionContext c;
  c.d_model = d_model;
  c.n_heads = n_heads;
  c.head_dim = head_dim;
  c.causal = causal;
  return c;
}

// Weights for every scheme that reads any, shaped for ctx_of(8, 2, 4) and 16 positions.
inline PositionWeights weights_for_small_context() {
  PositionWeights w;
  w.set("table", Tensor::zeros({16, 8}));
  w.set("relative_bias", Tensor::zeros({32, 2}));
  return w;
}

inline nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  return nlohmann::json::parse(in);
}

inline constexpr float kRelTol = 1e-6f;

inline void expect_rel_near(double got, double want, double rel, const std::string& what) {
  EXPECT_LE(std::fabs(got - want), rel * std::fabs(want) + 1e-30) << what << ": got " << got << " want " << want;
}

}  // namespace ordo::test
