// Scratch directories for tests, removed when the test that made them ends.
#pragma once

#include <string>

namespace ordo::test {

// A fresh empty directory under the test temp dir, named ordo-<tag>-XXXXXX. It is removed with
// everything in it when the current test ends, unless the test failed (then it is kept and its
// path printed, for a look at what the failing command wrote) or ORDO_KEEP_TEST_DIRS is set.
// Made outside any test, it is removed when the test program ends.
std::string make_temp_dir(const std::string& tag);

}  // namespace ordo::test
