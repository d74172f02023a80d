// Private: allocation for the big blocks a decode step streams through (packed weights, KV caches).
#pragma once

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>

#include "ordo/input.hpp"
#include "ordo/tensor.hpp"

namespace ordo::detail {

// bytes (at least 64) aligned to 64. With huge, a block of 2 MB or more is aligned to 2 MB and its
// whole 2 MB pieces are asked for transparent huge pages (the tail stays on 4 KB pages). A decode
// step reads every such block in full: on 4 KB pages that is a TLB miss per 4 KB (each a two-level
// page walk on a virtual machine), and the hardware prefetchers stop at every page end. The price:
// touching one byte of a piece makes all 2 MB of it resident, so huge suits blocks that will be
// filled (weights; a cache sized for its request), not ones that may stay mostly empty.
constexpr size_t kHugePage = size_t(2) << 20;

inline std::shared_ptr<void> alloc_streamed(size_t bytes, const std::string& what, bool huge_pages = true) {
  const bool huge = huge_pages && bytes >= kHugePage;
  const size_t align = huge ? kHugePage : 64;
  const size_t size = std::max<size_t>(align, (bytes + align - 1) / align * align);
  void* p = std::aligned_alloc(align, size);
  if (!p) throw out_of_memory(what, bytes);
#ifdef MADV_HUGEPAGE
  if (huge) madvise(p, bytes / kHugePage * kHugePage, MADV_HUGEPAGE);  // advice: without it the block still works
#endif
  return std::shared_ptr<void>(p, &std::free);
}

// Blocks for weights' packed panels, like alloc_streamed, but a block below 32 MB is cut from a
// shared slab on huge pages: a quantized model's weights are each well under 2 MB (a 768 x 768
// Q4_0 matrix is 332 KB) and would otherwise stream from 4 KB pages, as would the tails of larger
// ones. A slab is freed with the last block cut from it; slabs grow from 4 MB, so a small model
// reserves little address space.
class WeightSlabs {
 public:
  std::shared_ptr<void> alloc(size_t bytes, const std::string& what);

 private:
  std::mutex mu_;
  std::weak_ptr<void> current_;  // held by the blocks cut from it, not by the pool
  char* base_ = nullptr;
  size_t size_ = 0, used_ = 0;
  size_t next_ = size_t(4) << 20;
};

// The process's pool, for every weight.
std::shared_ptr<void> alloc_weight(size_t bytes, const std::string& what);

}  // namespace ordo::detail
