// Dropping resident pages of read-only weight file mappings (see mapped_pages.hpp).
#include "mapped_pages.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>

namespace ordo {

namespace {

// madvise(MADV_DONTNEED) on every page [begin, end) touches. The range lies in one mapping, which
// starts on a page and covers its last page whole, so those pages are the mapping's too; dropping a
// page a neighbouring tensor shares only makes its next read fault it in again. Advice: a failure
// changes nothing the program can see, so it is not an error.
void drop_pages(uintptr_t begin, uintptr_t end) {
  static const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t first = begin / page * page, last = (end + page - 1) / page * page;
  if (last > first) madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

}  // namespace

void MappedPages::add(const Weights& weights) {
  for (const Weights::MappedFile& f : weights.mapped_files()) {
    const auto at = reinterpret_cast<uintptr_t>(f.begin);
    if (f.size == 0) continue;
    spans_.emplace_back(at, at + f.size);
    keep_.push_back(f.keep);
  }
}

void MappedPages::release(const Tensor& t) const {
  if (t.empty()) return;
  const auto begin = reinterpret_cast<uintptr_t>(t.data), end = begin + t.nbytes();
  for (const auto& [b, e] : spans_)
    if (begin >= b && end <= e) {
      drop_pages(begin, end);
      return;
    }
}

void MappedPages::release_all() const {
  for (const auto& [b, e] : spans_) drop_pages(b, e);
}

}  // namespace ordo
