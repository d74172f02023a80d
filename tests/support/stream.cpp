// Streaming decode in one call, for tests.
#include "stream.hpp"

namespace ordo::test {

std::string stream_text(const Tokenizer& tok, const std::vector<int32_t>& ids, const std::vector<int32_t>& context,
                        bool skip_special) {
  StreamDecoder sd(tok, context, skip_special);
  std::string out;
  for (int32_t id : ids) out += sd.push(id);
  return out + sd.flush();
}

}  // namespace ordo::test
