// Byte-level BPE from GPT-2's vocab.json + merges.txt, as HF's slow GPT2Tokenizer: special-token
// splitting as PreTrainedTokenizer.tokenize, GPT-2's regex, bytes mapped through bytes_to_unicode,
// merges by rank. It runs on the tokenizer.json pipeline's components (hf/); tokenizer.json files
// themselves are read by make_tokenizer_json (hf/pipeline.cpp).
#include <nlohmann/json.hpp>

#include "dir_config.hpp"
#include "files.hpp"
#include "hf/hf.hpp"
#include "loaders.hpp"
#include "ordo/tensor.hpp"
#include "ordo/tokenizer.hpp"
#include "strings.hpp"

namespace ordo {
namespace td = tokenizer_detail;

std::unique_ptr<Tokenizer> td::make_bpe(const std::string& vocab_json, const std::string& merges_txt,
                                        const TokenizerOptions& opts, const DirConfig& cfg) {
  hf::BpeConfig c;
  c.where = vocab_json + " + " + merges_txt;
  c.vocab = hf::read_vocab_object(td::read_json_file(vocab_json), vocab_json);  // size and nesting limits checked
  const std::string merges = read_file(merges_txt);
  size_t pos = 0;
  bool first = true;
  while (pos < merges.size()) {
    size_t nl = merges.find('\n', pos);
    if (nl == std::string::npos) nl = merges.size();
    std::string line = merges.substr(pos, nl - pos);
    pos = nl + 1;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const bool version_line = first && starts_with(line, "#version");
    first = false;
    if (version_line || line.empty()) continue;
    c.merges.push_back(hf::split_merge_line(line, merges_txt));
  }
  hf::PipelineParts p;
  p.source = c.where;
  p.model = hf::make_bpe_model(std::move(c));
  p.pre_tokenizer = hf::make_byte_level_pre_tokenizer(false);
  p.decoder = hf::make_byte_level_decoder();
  p.slow_added_tokens = true;
  p.bos = p.eos = p.unk = "<|endoftext|>";
  return hf::make_pipeline(std::move(p), opts, cfg);
}

std::unique_ptr<Tokenizer> load_bpe(const std::string& vocab_json, const std::string& merges_txt,
                                    const TokenizerOptions& opts) {
  return td::make_bpe(vocab_json, merges_txt, opts, td::DirConfig{});
}

std::unique_ptr<Tokenizer> load_bpe_tokenizer_json(const std::string& tokenizer_json, const TokenizerOptions& opts) {
  return load_tokenizer_json(tokenizer_json, opts);
}

std::unique_ptr<Tokenizer> load_tokenizer_json(const std::string& tokenizer_json, const TokenizerOptions& opts) {
  return td::make_tokenizer_json(tokenizer_json, opts, td::DirConfig{});
}

}  // namespace ordo
