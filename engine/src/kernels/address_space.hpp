// Private: room left under an address-space limit (ulimit -v), for libraries that fail badly when an allocation does.
#pragma once

#include <sys/mman.h>
#include <sys/resource.h>

#include <cstddef>
#include <string>

#include "ordo/input.hpp"

namespace ordo::detail {

// Whether the process runs under an address-space limit (RLIMIT_AS; read once).
inline bool address_space_limited() {
  static const bool limited = [] {
    rlimit r{};
    return getrlimit(RLIMIT_AS, &r) == 0 && r.rlim_cur != RLIM_INFINITY;
  }();
  return limited;
}

// Whether `bytes` more of address space can be had now (reserved and released at once, nothing
// touched; true without a limit).
inline bool address_space_room(size_t bytes) {
  if (!address_space_limited()) return true;
  void* p = mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return false;
  munmap(p, bytes);
  return true;
}

// Out-of-memory Error naming `what` unless address_space_room(bytes). Some libraries end the
// process when an allocation inside them fails (oneDNN throws through its C interface, OpenBLAS
// retries forever): calls into them check first that their working memory fits.
inline void require_address_space(size_t bytes, const std::string& what) {
  if (!address_space_room(bytes)) throw out_of_memory(what, bytes);
}

}  // namespace ordo::detail
