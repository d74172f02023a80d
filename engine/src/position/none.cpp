// NoPE: no position information at all (the causal mask is the only order signal).
#include "internal.hpp"

namespace ordo::position_detail {
namespace {

class NoPosition final : public PositionScheme {
 public:
  const char* name() const override { return "none"; }
};

}  // namespace

const PositionSchemeInfo& scheme_none() {
  static const PositionSchemeInfo info = {
      "none",
      "nothing",
      {},  // nothing to scale
      {},
      [](const PositionConfig&, const PositionContext&) { return std::string(); },
      [](const PositionConfig&, const PositionContext&, const PositionWeights&) -> std::unique_ptr<PositionScheme> {
        return std::make_unique<NoPosition>();
      },
  };
  return info;
}

}  // namespace ordo::position_detail
