// Room left under an address-space limit, read from the kernel's count of the process's mapped pages.
#include "address_space.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdlib>

namespace ordo::detail {

namespace {

size_t address_space_limit() {
  static const size_t limit = [] {
    rlimit r{};
    if (getrlimit(RLIMIT_AS, &r) != 0 || r.rlim_cur == RLIM_INFINITY) return size_t(0);
    return static_cast<size_t>(r.rlim_cur);
  }();
  return limit;
}

// The process's mapped bytes, as RLIMIT_AS counts them: the first field of /proc/self/statm is
// the kernel's total_vm, in pages. 0 when it cannot be read. Opened on every call (only under a
// limit): a descriptor kept open would go on naming the parent in a forked child.
size_t mapped_bytes() {
  const int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char text[128];
  const ssize_t n = pread(fd, text, sizeof text - 1, 0);
  close(fd);
  if (n <= 0) return 0;
  text[n] = '\0';
  char* end = nullptr;
  const unsigned long long pages = std::strtoull(text, &end, 10);
  if (end == text) return 0;
  static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return static_cast<size_t>(pages) * page;
}

// Without /proc: reserve the block and release it at once (nothing touched).
bool reservation_fits(size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return false;
  munmap(p, bytes);
  return true;
}

}  // namespace

bool address_space_limited() { return address_space_limit() != 0; }

bool address_space_room(size_t bytes) {
  const size_t limit = address_space_limit();
  if (limit == 0) return true;
  const size_t mapped = mapped_bytes();
  if (mapped == 0) return reservation_fits(bytes);
  return mapped <= limit && limit - mapped >= bytes;
}

}  // namespace ordo::detail
