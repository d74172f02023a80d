// NoPE: no position information at all (the causal mask is the only order signal).
#include "internal.hpp"

namespace ordo::position_detail {
namespace {

class NoPosition final : public PositionScheme {
 public:
  const char* name() const override { return "none"; }
};

}  // namespace

std::unique_ptr<PositionScheme> make_none(const PositionConfig& cfg, const PositionContext&, const PositionWeights&) {
  // Nothing to scale.
  require_scaling("none", cfg.scaling, {ScalingType::None});
  return std::make_unique<NoPosition>();
}

}  // namespace ordo::position_detail
