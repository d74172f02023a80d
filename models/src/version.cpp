// ordo's version string.
#include "ordo/version.hpp"
namespace ordo {
const char* version() { return "0.1.0"; }
}  // namespace ordo
