// ordo's version string.
#pragma once
namespace ordo {
const char* version();
}
