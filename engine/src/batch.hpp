// Private: the rows of one forward pass (one segment per sequence) and how they go through a linear layer.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <vector>

#include "context_extension.hpp"
#include "ordo/kv_cache.hpp"
#include "ordo/ops.hpp"

namespace ordo::detail {

// Rows [row0, row0 + T) of a batched forward: one sequence's new tokens.
struct Segment {
  int64_t row0 = 0, T = 0;
  const int32_t* pos = nullptr;    // position of each row
  KVCache* self = nullptr;         // self-attention cache, appended to at slots [length, length + T)
  const KVCache* cross = nullptr;  // encoder keys/values (encoder-decoder decoder stacks)
  int64_t seq_len = 1;             // positions this sequence's forward sees (max position + 1)
  const KeyMap* keys = nullptr;    // decoder self-attention whose keys are not all at their exact distance
};

// The rows of one forward: its segments, the one-token ones first.
struct Batch {
  std::vector<Segment> segs;
  int64_t rows = 0;
  int64_t single_rows = 0;     // rows [0, single_rows): the one-token segments
  bool prompts_alone = false;  // each longer segment through the linear layers on its own
};

// y = x · Wᵀ + b for every target (at most 4), x [b.rows, K], as the batch's plan says: the
// one-token rows together, then the prompts' rows together or each segment alone. (The panel
// kernels give a row the same bits in any of these; the plan decides how often a weight is read.)
void project(Backend be, const Batch& b, const float* x, int64_t K, std::initializer_list<LinearTarget> targets);

}  // namespace ordo::detail
