// Weight panels cut from shared huge-page slabs, so that small weights stream without TLB misses too.
#include "big_alloc.hpp"

namespace ordo::detail {

namespace {
constexpr size_t kLargestSlab = size_t(32) << 20;
}  // namespace

std::shared_ptr<void> WeightSlabs::alloc(size_t bytes, const std::string& what) {
  const size_t need = std::max<size_t>(64, (bytes + 63) / 64 * 64);
  if (need > kLargestSlab) return alloc_streamed(bytes, what);
  std::lock_guard<std::mutex> lock(mu_);
  std::shared_ptr<void> slab = current_.lock();
  if (!slab || used_ + need > size_) {
    const size_t size = std::max(next_, (need + kHugePage - 1) / kHugePage * kHugePage);
    slab = alloc_streamed(size, what);
    next_ = std::min(2 * next_, kLargestSlab);
    current_ = slab;
    base_ = static_cast<char*>(slab.get());
    size_ = size;
    used_ = 0;
  }
  void* block = base_ + used_;
  used_ += need;
  return std::shared_ptr<void>(slab, block);  // shares the slab's count: freed with its last block
}

std::shared_ptr<void> alloc_weight(size_t bytes, const std::string& what) {
  static WeightSlabs pool;
  return pool.alloc(bytes, what);
}

}  // namespace ordo::detail
