// Private to tokenizer/: the SentencePiece tokenizer built from a serialized model in memory, which
// gguf_tokenizer.cpp makes from a GGUF file's vocabulary lists.
#pragma once

#include <memory>
#include <string>

#include "dir_config.hpp"
#include "ordo/tokenizer.hpp"

namespace ordo::tokenizer_detail {

// `proto`: a serialized sentencepiece ModelProto; `source` names it in errors (sentencepiece_tokenizer.cpp).
std::unique_ptr<Tokenizer> make_sentencepiece_proto(const std::string& proto, const std::string& source,
                                                    const TokenizerOptions& opts, const DirConfig& cfg);

}  // namespace ordo::tokenizer_detail
