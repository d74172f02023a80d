// The tokenizer loaders, one per format; load_tokenizer.cpp picks one for a model directory.
#pragma once

#include <memory>
#include <string>

#include "dir_config.hpp"
#include "ordo/tokenizer.hpp"

namespace ordo::tokenizer_detail {

// The public loaders call these with an empty DirConfig.
std::unique_ptr<Tokenizer> make_sentencepiece(const std::string& model_file, const TokenizerOptions& opts,
                                              const DirConfig& cfg);
std::unique_ptr<Tokenizer> make_bpe(const std::string& vocab_json, const std::string& merges_txt,
                                    const TokenizerOptions& opts, const DirConfig& cfg);
// tokenizer.json (any model type), hf/pipeline.cpp.
std::unique_ptr<Tokenizer> make_tokenizer_json(const std::string& tokenizer_json, const TokenizerOptions& opts,
                                               const DirConfig& cfg);
// Marian: dir holds source.spm, target.spm and vocab.json.
std::unique_ptr<Tokenizer> make_marian(const std::string& dir, const TokenizerOptions& opts, const DirConfig& cfg);
std::unique_ptr<Tokenizer> make_wordpiece(const std::string& vocab_txt, const TokenizerOptions& opts,
                                          const DirConfig& cfg);

}  // namespace ordo::tokenizer_detail
