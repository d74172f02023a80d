// Streaming decode in one call, for tests.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ordo/tokenizer.hpp"

namespace ordo::test {

// What a StreamDecoder over `context` gives for `ids` pushed one at a time, then flush().
std::string stream_text(const Tokenizer& tok, const std::vector<int32_t>& ids, const std::vector<int32_t>& context,
                        bool skip_special);

}  // namespace ordo::test
