// Weight panels cut from shared huge-page slabs (engine/src/kernels/big_alloc.cpp): small blocks lie
// side by side in memory advised for huge pages, and a slab lives exactly as long as its blocks.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "../engine/src/kernels/big_alloc.hpp"

namespace {

using ordo::detail::WeightSlabs;

// The VmFlags of the mapping holding p, from /proc/self/smaps ("" if none holds it).
std::string vm_flags_of(const void* p) {
  const auto at = reinterpret_cast<uintptr_t>(p);
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    uintptr_t lo = 0, hi = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> lo >> dash >> hi && dash == '-') {
      inside = lo <= at && at < hi;
      continue;
    }
    if (inside && line.rfind("VmFlags:", 0) == 0) return line;
  }
  return "";
}

TEST(WeightSlabs, SmallBlocksLieSideBySideOnHugePages) {
  // A 768 x 768 Q4_0 matrix's panels (332 KB): on its own it would get 4 KB pages.
  const size_t bytes = 768 * 24 * 18 + 40;  // not a multiple of 64: the next block starts 64-aligned
  WeightSlabs pool;
  std::shared_ptr<void> a = pool.alloc(bytes, "test a"), b = pool.alloc(bytes, "test b");
  const auto pa = reinterpret_cast<uintptr_t>(a.get()), pb = reinterpret_cast<uintptr_t>(b.get());
  EXPECT_EQ(pa % (size_t(2) << 20), 0u);  // the first block opens the slab
  EXPECT_EQ(pb - pa, (bytes + 63) / 64 * 64);
  EXPECT_NE(vm_flags_of(a.get()).find(" hg"), std::string::npos) << vm_flags_of(a.get());
  EXPECT_NE(vm_flags_of(b.get()).find(" hg"), std::string::npos) << vm_flags_of(b.get());
}

TEST(WeightSlabs, ASlabLivesWhileAnyBlockDoes) {
  WeightSlabs pool;
  std::shared_ptr<void> first = pool.alloc(1000, "first");
  std::shared_ptr<void> second = pool.alloc(1000, "second");
  std::weak_ptr<void> slab_of_first = first;  // shares the slab's count
  ASSERT_EQ(reinterpret_cast<uintptr_t>(second.get()) - reinterpret_cast<uintptr_t>(first.get()), 1024u);
  first.reset();
  EXPECT_FALSE(slab_of_first.expired());  // second still holds the slab
  second.reset();
  EXPECT_TRUE(slab_of_first.expired());
  // With its blocks gone the slab is freed, and the next block starts a new one that works.
  std::shared_ptr<void> third = pool.alloc(4096, "third");
  ASSERT_NE(third.get(), nullptr);
  static_cast<char*>(third.get())[4095] = 1;
}

TEST(WeightSlabs, SlabsFillThenGrow) {
  WeightSlabs pool;
  // The first slab is 4 MB: three 1.5 MB blocks need a second one, of 8 MB.
  const size_t part = size_t(3) << 19;
  std::shared_ptr<void> a = pool.alloc(part, "a"), b = pool.alloc(part, "b"), c = pool.alloc(part, "c");
  const auto pa = reinterpret_cast<uintptr_t>(a.get()), pb = reinterpret_cast<uintptr_t>(b.get()),
             pc = reinterpret_cast<uintptr_t>(c.get());
  EXPECT_EQ(pb - pa, part);
  EXPECT_NE(pc, pb + part);
  EXPECT_EQ(pc % (size_t(2) << 20), 0u);
  std::weak_ptr<void> first_slab = a;
  a.reset();
  b.reset();
  EXPECT_TRUE(first_slab.expired());  // c lives in the second slab
  static_cast<char*>(c.get())[part - 1] = 1;
}

TEST(WeightSlabs, LargeBlocksGetTheirOwn) {
  const size_t big = size_t(40) << 20;
  WeightSlabs pool;
  std::shared_ptr<void> small = pool.alloc(4096, "small"), large = pool.alloc(big, "large");
  std::weak_ptr<void> slab = small;
  small.reset();
  EXPECT_TRUE(slab.expired());  // the large block does not share the small one's slab
  EXPECT_EQ(reinterpret_cast<uintptr_t>(large.get()) % (size_t(2) << 20), 0u);
}

}  // namespace
