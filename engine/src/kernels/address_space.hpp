// Private: room left under an address-space limit (ulimit -v), for libraries that fail badly when an allocation does.
#pragma once

#include <cstddef>
#include <string>

#include "ordo/input.hpp"

namespace ordo::detail {

// Whether the process runs under an address-space limit (RLIMIT_AS; read once).
bool address_space_limited();

// Whether `bytes` more of address space can be had now (true without a limit). Reads the
// process's mapped size rather than reserving a block: a reservation, however brief, takes the
// room from another thread allocating at that moment, and oneDNN's JIT crashes when its code
// buffer cannot be mapped.
bool address_space_room(size_t bytes);

// Out-of-memory Error naming `what` unless address_space_room(bytes). Some libraries end the
// process when an allocation inside them fails (oneDNN throws through its C interface, OpenBLAS
// retries forever): calls into them check first that their working memory fits.
inline void require_address_space(size_t bytes, const std::string& what) {
  if (!address_space_room(bytes)) throw out_of_memory(what, bytes);
}

}  // namespace ordo::detail
