// Per-thread scratch buffers of the forward pass, one per role.
#pragma once

#include <cstdint>
#include <vector>

namespace ordo::detail {

// Reused by every call on a thread: once warm, a decode step allocates nothing but its returned
// logits (the buffers only grow, to the largest chunk seen). Roles never overlap within one call
// chain (run_stack → attention / feed_forward).
enum Scratch {
  kScrQ,
  kScrK,
  kScrV,
  kScrCtx,
  kScrScores,
  kScrKf,
  kScrVf,
  kScrUp,
  kScrGate,
  kScrH,
  kScrA,
  kScrF,
  kScrX,
  kScrQ2,
  kScrKg,
  kScrKgf,
  kScrScores2,
  kScrCount
};

// The calling thread's buffer for `role`, at least n floats.
inline float* scratch(Scratch role, int64_t n) {
  thread_local std::vector<float> bufs[kScrCount];
  std::vector<float>& b = bufs[role];
  if (b.size() < static_cast<size_t>(n)) b.resize(static_cast<size_t>(n));
  return b.data();
}

}  // namespace ordo::detail
