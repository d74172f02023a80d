// Private to engine/src/position: the scheme factories the registry lists, and helpers they share.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>

#include "ordo/position.hpp"

namespace ordo::position_detail {

using Factory = std::unique_ptr<PositionScheme> (*)(const PositionConfig&, const PositionContext&,
                                                    const PositionWeights&);

std::unique_ptr<PositionScheme> make_none(const PositionConfig&, const PositionContext&, const PositionWeights&);
std::unique_ptr<PositionScheme> make_learned(const PositionConfig&, const PositionContext&, const PositionWeights&);
std::unique_ptr<PositionScheme> make_sinusoidal(const PositionConfig&, const PositionContext&,
                                                const PositionWeights&);
std::unique_ptr<PositionScheme> make_relative(const PositionConfig&, const PositionContext&, const PositionWeights&);
std::unique_ptr<PositionScheme> make_rope(const PositionConfig&, const PositionContext&, const PositionWeights&);
std::unique_ptr<PositionScheme> make_alibi(const PositionConfig&, const PositionContext&, const PositionWeights&);

// Throws "<scheme> does not support <type> scaling; supported: a, b" unless cfg.scaling.type is listed,
// and "<scheme>: <type> scaling needs a factor in (0, kMaxScalingFactor]" for any other factor.
void require_scaling(const char* scheme, const Scaling& s, std::initializer_list<ScalingType> supported);

// A weight as an owned-or-shared F32 tensor (converts F16/BF16; throws for I8).
Tensor as_f32(const Tensor& t, const char* what);

// "%g"-style formatting of a double for messages.
std::string fmt(double v);

}  // namespace ordo::position_detail
