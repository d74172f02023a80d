// Marian (opus-mt) as Hugging Face's MarianTokenizer: source.spm cuts the source text into pieces,
// vocab.json maps pieces to ids (unknown pieces to <unk>), a leading ">>xx<<" language code is one
// token of its own, </s> is appended; decoding maps ids back through vocab.json and runs the pieces
// through target.spm, special tokens kept apart (convert_tokens_to_string).
#include <sentencepiece_processor.h>

#include <nlohmann/json.hpp>
#include <unordered_map>

#include "added_tokens.hpp"
#include "dir_config.hpp"
#include "files.hpp"
#include "loaders.hpp"
#include "ordo/tensor.hpp"
#include "ordo/tokenizer.hpp"
#include "strings.hpp"
#include "token_ids.hpp"
#include "utf8.hpp"

namespace ordo {
namespace td = tokenizer_detail;

namespace {

const std::string kSpaceSymbol = "\xE2\x96\x81";  // U+2581

class MarianTokenizer final : public Tokenizer {
 public:
  MarianTokenizer(const std::string& dir, const TokenizerOptions& opts, const td::DirConfig& cfg);

  const char* kind() const override { return "marian"; }
  std::vector<int32_t> encode(const std::string& text, bool add_special) const override {
    std::vector<int32_t> ids;
    for (const auto& t : tokenize(text)) {
      auto it = vocab_.find(t);
      ids.push_back(it == vocab_.end() ? unk_tok_ : it->second);
    }
    if (add_special && add_eos_ && eos_ >= 0) ids.push_back(eos_);
    return ids;
  }
  std::vector<std::string> tokenize(const std::string& text) const override;
  std::string decode(const std::vector<int32_t>& ids, bool skip_special) const override;
  int32_t vocab_size() const override { return static_cast<int32_t>(tokens_.size()); }
  std::string id_to_piece(int32_t id) const override {
    if (id < 0 || id >= vocab_size()) td::throw_bad_id("marian", id, vocab_size());
    return tokens_[id].empty() ? unk_token_ : tokens_[id];  // a hole in vocab.json reads as <unk>, as HF
  }

 private:
  void load_spm(sentencepiece::SentencePieceProcessor& sp, const std::string& path);
  std::string target_decode(const std::vector<std::string>& pieces) const;

  sentencepiece::SentencePieceProcessor source_, target_;
  std::string target_path_;
  std::unordered_map<std::string, int32_t> vocab_;
  std::vector<std::string> tokens_;
  std::string unk_token_ = "<unk>";
  int32_t unk_tok_ = -1;
  bool add_eos_ = true;
  td::AddedTokens specials_;
};

void MarianTokenizer::load_spm(sentencepiece::SentencePieceProcessor& sp, const std::string& path) {
  const auto st = sp.LoadFromSerializedProto(td::read_file(path));
  if (!st.ok()) throw Error("marian tokenizer: cannot load " + path + ": " + st.ToString());
}

MarianTokenizer::MarianTokenizer(const std::string& dir, const TokenizerOptions& opts, const td::DirConfig& cfg) {
  if (td::file_exists(td::join_path(dir, "target_vocab.json")))
    throw Error("marian tokenizer: " + td::join_path(dir, "target_vocab.json") +
                ": separate source/target vocabularies are not supported");
  load_spm(source_, td::join_path(dir, "source.spm"));
  target_path_ = td::join_path(dir, "target.spm");
  load_spm(target_, target_path_);
  const std::string vpath = td::join_path(dir, "vocab.json");
  const nlohmann::json j = td::read_json_file(vpath);  // size and nesting limits checked
  if (!j.is_object() || j.empty())
    throw Error("marian tokenizer: " + vpath + " must be a non-empty object of piece -> id");
  int64_t max_id = -1;
  for (const auto& [piece, id] : j.items()) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= (int64_t{1} << 24))
      throw Error("marian tokenizer: " + vpath + ": piece '" + piece + "' has an invalid id (want 0 <= id < 2^24)");
    max_id = std::max(max_id, id.get<int64_t>());
  }
  tokens_.assign(static_cast<size_t>(max_id + 1), std::string());
  for (const auto& [piece, id] : j.items()) {
    const auto i = id.get<int32_t>();
    if (!tokens_[i].empty())
      throw Error("marian tokenizer: " + vpath + ": pieces '" + tokens_[i] + "' and '" + piece + "' share id " +
                  std::to_string(i));
    tokens_[i] = piece;
    vocab_[piece] = i;
  }
  unk_token_ = cfg.unk_token.value_or("<unk>");
  const std::string eos = cfg.eos_token.value_or("</s>"), pad = cfg.pad_token.value_or("<pad>");
  for (const std::string& s : {unk_token_, eos, pad}) {
    auto it = vocab_.find(s);
    if (it == vocab_.end()) throw Error("marian tokenizer: " + vpath + ": special token '" + s + "' is not in it");
    td::AddedToken t;
    t.content = s;
    t.id = it->second;
    specials_.add(t);
  }
  unk_tok_ = vocab_.at(unk_token_);
  unk_ = opts.unk_id.value_or(unk_tok_);
  eos_ = opts.eos_id.value_or(cfg.eos_id.value_or(vocab_.at(eos)));
  pad_ = opts.pad_id.value_or(cfg.pad_id.value_or(vocab_.at(pad)));
  bos_ = opts.bos_id.value_or(-1);         // Marian has no BOS: the decoder starts from pad
  add_eos_ = opts.add_eos.value_or(true);  // MarianTokenizer always appends </s>; add_eos_token is not its flag
}

std::vector<std::string> MarianTokenizer::tokenize(const std::string& text_in) const {
  std::vector<std::string> out;
  for (const auto& chunk : specials_.split(td::utf8_lossy(text_in))) {
    if (chunk.added) {
      out.push_back(chunk.text);
      continue;
    }
    std::string rest = chunk.text;
    // remove_language_code: a ">>xx<<" code at the start is a token of its own.
    if (td::starts_with(rest, ">>")) {
      const size_t end = rest.find("<<");
      if (end != std::string::npos) {
        out.push_back(rest.substr(0, end + 2));
        rest = rest.substr(end + 2);
      }
    }
    std::vector<std::string> pieces;
    const auto st = source_.Encode(rest, &pieces);
    if (!st.ok()) throw Error("marian tokenizer: source.spm: encode failed: " + st.ToString());
    out.insert(out.end(), pieces.begin(), pieces.end());
  }
  return out;
}

std::string MarianTokenizer::target_decode(const std::vector<std::string>& pieces) const {
  std::string out;
  if (pieces.empty()) return out;
  const auto st = target_.Decode(pieces, &out);
  if (!st.ok()) throw Error("marian tokenizer: " + target_path_ + ": decode failed: " + st.ToString());
  return out;
}

std::string MarianTokenizer::decode(const std::vector<int32_t>& ids, bool skip_special) const {
  std::string out;
  std::vector<std::string> run;
  for (int32_t id : ids) {
    const std::string piece = id_to_piece(id);
    if (!specials_.find(piece)) {
      run.push_back(piece);
      continue;
    }
    if (skip_special) continue;
    out += target_decode(run) + piece + " ";
    run.clear();
  }
  out += target_decode(run);
  return td::py_strip(td::replace_all(out, kSpaceSymbol, " "));
}

}  // namespace

std::unique_ptr<Tokenizer> td::make_marian(const std::string& dir, const TokenizerOptions& opts, const DirConfig& cfg) {
  return std::make_unique<MarianTokenizer>(dir, opts, cfg);
}

std::unique_ptr<Tokenizer> load_marian(const std::string& dir, const TokenizerOptions& opts) {
  return td::make_marian(dir, opts, td::read_dir_config(dir));
}

}  // namespace ordo
