// One libFuzzer binary per target: ORDO_FUZZ_TARGET names the function of fuzz_targets.hpp.
#include <cstdio>
#include <cstdlib>

#include "fuzz_targets.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const ordo::fuzz::Target target = [] {
    const ordo::fuzz::Target t = ordo::fuzz::find_target(ORDO_FUZZ_TARGET);
    if (!t) {
      std::fprintf(stderr, "unknown fuzz target %s\n", ORDO_FUZZ_TARGET);
      std::abort();
    }
    return t;
  }();
  return target(data, size);
}
