// load_tokenizer(): pick the tokenizer kind from the files a model directory holds and apply the
// directory's tokenizer_config.json / config.json / generation_config.json settings.
#include "dir_config.hpp"
#include "files.hpp"
#include "loaders.hpp"
#include "ordo/input.hpp"
#include "ordo/tensor.hpp"
#include "ordo/tokenizer.hpp"

namespace ordo {
namespace td = tokenizer_detail;

namespace {

// source: the file the vocabulary comes from.
std::unique_ptr<Tokenizer> load_from_dir(const std::string& dir, const TokenizerOptions& opts, std::string& source) {
  const td::DirConfig cfg = td::read_dir_config(dir);
  for (const char* name : {"tokenizer.model", "spiece.model"}) {
    source = td::join_path(dir, name);
    if (td::file_exists(source)) return td::make_sentencepiece(source, opts, cfg);
  }
  source = td::join_path(dir, "vocab.json");
  if (td::file_exists(td::join_path(dir, "source.spm")) && td::file_exists(td::join_path(dir, "target.spm")))
    return td::make_marian(dir, opts, cfg);
  const std::string tj = td::join_path(dir, "tokenizer.json");
  const std::string vj = td::join_path(dir, "vocab.json"), mt = td::join_path(dir, "merges.txt");
  const std::string vt = td::join_path(dir, "vocab.txt");
  const bool has_bpe_files = td::file_exists(vj) && td::file_exists(mt), has_vocab_txt = td::file_exists(vt);
  source = tj;
  if (td::file_exists(tj)) return td::make_tokenizer_json(tj, opts, cfg);
  source = vj;
  if (has_bpe_files) return td::make_bpe(vj, mt, opts, cfg);
  source = vt;
  if (has_vocab_txt) return td::make_wordpiece(vt, opts, cfg);
  throw Error("tokenizer: no tokenizer files in " + dir +
              " (expected tokenizer.model, spiece.model, source.spm + target.spm + vocab.json, tokenizer.json, "
              "vocab.json + merges.txt or vocab.txt)");
}

}  // namespace

std::unique_ptr<Tokenizer> load_tokenizer(const std::string& dir, const TokenizerOptions& opts) {
  return with_ordo_errors("tokenizer: " + dir, [&] {
    std::string source;
    std::unique_ptr<Tokenizer> t = load_from_dir(dir, opts, source);
    t->source_ = source;
    return t;
  });
}

}  // namespace ordo
