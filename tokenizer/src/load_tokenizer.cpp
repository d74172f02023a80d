// load_tokenizer(): pick the tokenizer kind from the files a model directory holds and apply the
// directory's tokenizer_config.json / config.json / generation_config.json settings.
#include <nlohmann/json.hpp>

#include "internal.hpp"
#include "ordo/input.hpp"

namespace ordo {
namespace td = tokenizer_detail;

namespace {
// model.type of a tokenizer.json ("BPE", "WordPiece", "Unigram", ...), "" if absent/unreadable.
std::string tokenizer_json_model_type(const std::string& path) {
  const auto j = td::read_json_file(path);
  if (j.is_object() && j.contains("model") && j["model"].is_object()) {
    const auto& m = j["model"];
    if (!m.contains("type")) return "BPE";
    if (!m["type"].is_string()) throw Error("tokenizer: " + path + ": model.type must be a string");
    return m["type"].get<std::string>();
  }
  return "";
}

std::unique_ptr<Tokenizer> load_from_dir(const std::string& dir, const TokenizerOptions& opts) {
  const td::DirConfig cfg = td::read_dir_config(dir);
  for (const char* name : {"tokenizer.model", "spiece.model"}) {
    const std::string path = td::join_path(dir, name);
    if (td::file_exists(path)) return td::make_sentencepiece(path, opts, cfg);
  }
  const std::string tj = td::join_path(dir, "tokenizer.json");
  const std::string vj = td::join_path(dir, "vocab.json"), mt = td::join_path(dir, "merges.txt");
  const std::string vt = td::join_path(dir, "vocab.txt");
  const bool has_bpe_files = td::file_exists(vj) && td::file_exists(mt), has_vocab_txt = td::file_exists(vt);
  if (td::file_exists(tj)) {
    const std::string type = tokenizer_json_model_type(tj);
    if (type == "BPE" || (!has_bpe_files && !has_vocab_txt)) return td::make_bpe_json(tj, opts, cfg);
  }
  if (has_bpe_files) return td::make_bpe(vj, mt, opts, cfg);
  if (has_vocab_txt) return td::make_wordpiece(vt, opts, cfg);
  throw Error("tokenizer: no tokenizer files in " + dir +
              " (expected tokenizer.model, spiece.model, tokenizer.json, vocab.json + merges.txt or vocab.txt)");
}

}  // namespace

std::unique_ptr<Tokenizer> load_tokenizer(const std::string& dir, const TokenizerOptions& opts) {
  return with_ordo_errors("tokenizer: " + dir, [&] { return load_from_dir(dir, opts); });
}

}  // namespace ordo
