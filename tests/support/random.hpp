// Seeded uniform random vectors for kernel tests: the same seed gives the same values everywhere.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace ordo::test {

inline std::vector<float> random_vec(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

}  // namespace ordo::test
