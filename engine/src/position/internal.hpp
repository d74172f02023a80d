// Private to engine/src/position: helpers the schemes share.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "ordo/position.hpp"

namespace ordo::position_detail {

// Throws "<scheme> does not support <type> scaling; supported: a, b" unless the scheme's entry lists
// s.type, and "<scheme>: <type> scaling needs a factor in (0, kMaxScalingFactor]" for any other factor.
void require_scaling(const PositionSchemeInfo& scheme, const Scaling& s);

// A weight as an owned-or-shared F32 tensor (converts F16/BF16; throws for I8).
Tensor as_f32(const Tensor& t, const char* what);

// "%g"-style formatting of a double for messages.
std::string num_str(double v);

}  // namespace ordo::position_detail
