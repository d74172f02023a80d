// SentencePiece models through libsentencepiece, wrapped to behave like Hugging Face's slow
// LlamaTokenizer / T5Tokenizer (transformers 4.47): special-token strings in the text are split out
// before SentencePiece sees it, `legacy=False` encodes without the dummy prefix and with the
// "<unk>"-prefix trick, decode strips the prefix space HF adds and handles special tokens apart.
#include <sentencepiece_processor.h>

#include <unordered_set>

#include "added_tokens.hpp"
#include "dir_config.hpp"
#include "files.hpp"
#include "gguf_tokenizer.hpp"
#include "loaders.hpp"
#include "ordo/input.hpp"
#include "ordo/tensor.hpp"
#include "ordo/tokenizer.hpp"
#include "strings.hpp"
#include "token_ids.hpp"
#include "utf8.hpp"

namespace ordo {
namespace td = tokenizer_detail;

namespace {

const std::string kSpaceSymbol = "\xE2\x96\x81";  // U+2581, SentencePiece's whitespace mark

enum class Style { Llama, T5, Plain };

// The special-token strings a style names ("" for none) and how many <extra_id_i> it adds.
struct SpecialStrings {
  std::string bos, eos, unk, pad;
  int extra_ids = 0;
  bool is_one(const std::string& s) const { return s == bos || s == eos || s == unk || s == pad; }
};
struct SpecialIds {
  int32_t bos = -1, eos = -1, unk = -1, pad = -1;
};

class SentencePieceTokenizer final : public Tokenizer {
 public:
  // `proto`: the serialized model itself (path then only names it); null: read from `path`.
  SentencePieceTokenizer(const std::string& path, const TokenizerOptions& opts, const td::DirConfig& cfg,
                         const std::string* proto = nullptr);

  const char* kind() const override { return "sentencepiece"; }
  std::vector<int32_t> encode(const std::string& text, bool add_special) const override;
  std::vector<std::string> tokenize(const std::string& text) const override;
  std::string decode(const std::vector<int32_t>& ids, bool skip_special) const override;
  int32_t vocab_size() const override { return vocab_; }
  std::string id_to_piece(int32_t id) const override;

 private:
  std::vector<std::string> sp_pieces(const std::string& text) const;
  std::string sp_decode(const std::vector<std::string>& pieces) const;
  std::vector<std::string> hf_tokenize(const std::string& text) const;        // PreTrainedTokenizer.tokenize
  std::vector<std::string> hf_inner_tokenize(const std::string& text) const;  // _tokenize
  std::string tokens_to_string(std::vector<std::string> tokens) const;        // convert_tokens_to_string
  int32_t resolve(const std::string& token);                                  // token string -> id
  // The constructor's steps, in order.
  void choose_style(const TokenizerOptions& opts, const td::DirConfig& cfg, int extra_opt);
  void load_model();
  SpecialStrings special_strings(const td::DirConfig& cfg, int extra_opt) const;
  std::vector<std::string> add_tokens(const SpecialStrings& sp, const td::DirConfig& cfg);
  SpecialIds collect_specials(const SpecialStrings& sp, const std::vector<std::string>& additional);
  void choose_ids(const TokenizerOptions& opts, const td::DirConfig& cfg, const SpecialIds& ids);

  std::string path_;
  const std::string* given_proto_ = nullptr;  // only during construction
  sentencepiece::SentencePieceProcessor sp_;
  Style style_ = Style::Llama;
  bool legacy_ = true, add_prefix_space_ = true, add_bos_ = false, add_eos_ = false;
  int32_t sp_size_ = 0, vocab_ = 0;
  td::AddedTokens added_;
  std::unordered_set<std::string> special_strs_;  // HF all_special_tokens
  std::unordered_set<int32_t> special_ids_;
  std::unordered_set<std::string> separate_strs_;  // decoded on their own, joined with spaces
  std::string unk_token_;
  size_t unk_token_length_ = 0;
};

std::string status_text(const sentencepiece::util::Status& st) { return st.ToString(); }

SentencePieceTokenizer::SentencePieceTokenizer(const std::string& path, const TokenizerOptions& opts,
                                               const td::DirConfig& cfg, const std::string* proto)
    : path_(path), given_proto_(proto) {
  const int extra_opt = opts.extra_ids.value_or(cfg.extra_ids.value_or(-1));
  if (extra_opt > td::kMaxIdGap)
    throw Error("sentencepiece tokenizer: extra_ids " + std::to_string(extra_opt) + " is more than the limit of " +
                std::to_string(td::kMaxIdGap));
  choose_style(opts, cfg, extra_opt);
  legacy_ = opts.legacy.value_or(cfg.legacy.value_or(true));
  add_prefix_space_ = cfg.add_prefix_space.value_or(true);
  load_model();
  const SpecialStrings sp = special_strings(cfg, extra_opt);
  const std::vector<std::string> additional = add_tokens(sp, cfg);
  choose_ids(opts, cfg, collect_specials(sp, additional));
  unk_token_ = sp.unk.empty() ? "<unk>" : sp.unk;
  unk_token_length_ = sp_pieces(unk_token_).size();
}

// Style: explicit option, else what the directory says, else T5 when extra ids are asked for.
void SentencePieceTokenizer::choose_style(const TokenizerOptions& opts, const td::DirConfig& cfg, int extra_opt) {
  if (opts.sp_style) {
    if (*opts.sp_style == "llama")
      style_ = Style::Llama;
    else if (*opts.sp_style == "t5")
      style_ = Style::T5;
    else if (*opts.sp_style == "plain")
      style_ = Style::Plain;
    else
      throw Error("sentencepiece tokenizer: unknown sp_style '" + *opts.sp_style + "' (llama, t5 or plain)");
    return;
  }
  const std::string mt = cfg.model_type.value_or("");
  const std::string cls = cfg.tokenizer_class.value_or("");
  if (mt == "t5" || mt == "mt5" || mt == "umt5" || cls.rfind("T5Tokenizer", 0) == 0 || extra_opt > 0)
    style_ = Style::T5;
}

void SentencePieceTokenizer::load_model() {
  std::string proto = given_proto_ ? *given_proto_ : td::read_file(path_);
  given_proto_ = nullptr;
  if (!legacy_ && style_ != Style::Plain) {
    // HF legacy=False: the model with normalizer_spec.add_dummy_prefix = false. Protobuf merges a
    // repeated occurrence of a message field, so appending
    //   field 3 (normalizer_spec, length-delimited 2) { field 3 (add_dummy_prefix, varint) = 0 }
    // to the serialized ModelProto is exactly HF's NormalizerSpec MergeFrom.
    proto += std::string("\x1A\x02\x18\x00", 4);
  }
  const auto st = sp_.LoadFromSerializedProto(proto);
  if (!st.ok()) throw Error("sentencepiece tokenizer: cannot load " + path_ + ": " + status_text(st));
  sp_size_ = sp_.GetPieceSize();
  vocab_ = sp_size_;
}

SpecialStrings SentencePieceTokenizer::special_strings(const td::DirConfig& cfg, int extra_opt) const {
  auto piece_or_empty = [&](int id) { return id >= 0 && id < sp_size_ ? sp_.IdToPiece(id) : std::string(); };
  SpecialStrings sp;
  switch (style_) {
    case Style::Llama:
      sp.unk = cfg.unk_token.value_or("<unk>");
      sp.bos = cfg.bos_token.value_or("<s>");
      sp.eos = cfg.eos_token.value_or("</s>");
      sp.pad = cfg.pad_token.value_or("");
      break;
    case Style::T5:
      sp.unk = cfg.unk_token.value_or("<unk>");
      sp.eos = cfg.eos_token.value_or("</s>");
      sp.pad = cfg.pad_token.value_or("<pad>");
      sp.extra_ids = extra_opt >= 0 ? extra_opt : 100;
      break;
    case Style::Plain:
      sp.unk = piece_or_empty(sp_.unk_id());
      sp.bos = piece_or_empty(sp_.bos_id());
      sp.eos = piece_or_empty(sp_.eos_id());
      sp.pad = piece_or_empty(sp_.pad_id());
      break;
  }
  return sp;
}

// T5's <extra_id_i> and the directory's added tokens; returns the additional special strings.
std::vector<std::string> SentencePieceTokenizer::add_tokens(const SpecialStrings& sp, const td::DirConfig& cfg) {
  std::vector<std::string> additional;
  // T5: <extra_id_i> is the (i+1)-th id counted back from the end of sp vocab + extra_ids.
  for (int i = 0; i < sp.extra_ids; ++i) {
    td::AddedToken t;
    t.content = "<extra_id_" + std::to_string(i) + ">";
    t.id = sp_size_ - 1 + sp.extra_ids - i;
    t.lstrip = t.rstrip = true;
    added_.add(t);
    additional.push_back(t.content);
  }
  if (sp.extra_ids > 0) vocab_ = sp_size_ + sp.extra_ids;
  const size_t listed = static_cast<size_t>(vocab_) + cfg.added_tokens.size();
  for (const auto& t : cfg.added_tokens) {
    td::check_id_limit(t.id, listed, "sentencepiece tokenizer: " + path_ + ": added token '" + t.content + "'");
    added_.add(t);
    vocab_ = std::max(vocab_, t.id + 1);
    if (t.special && !sp.is_one(t.content)) additional.push_back(t.content);
    if (!t.special) separate_strs_.insert(t.content);
  }
  return additional;
}

// HF's all_special_tokens and their ids; returns the bos, eos, unk and pad ids (-1 for none).
SpecialIds SentencePieceTokenizer::collect_specials(const SpecialStrings& sp,
                                                    const std::vector<std::string>& additional) {
  SpecialIds ids;
  special_strs_ = {sp.unk, sp.bos, sp.eos, sp.pad};
  special_strs_.erase("");
  if (style_ != Style::Plain) {
    // Special attributes become added tokens (no stripping), as PreTrainedTokenizer.__init__ does;
    // in this order, as resolve() may append tokens.
    for (auto [str, id] : {std::pair{&sp.unk, &ids.unk}, {&sp.bos, &ids.bos}, {&sp.eos, &ids.eos}, {&sp.pad, &ids.pad}})
      if (!str->empty()) *id = resolve(*str);
    for (const auto& a : additional) {
      special_strs_.insert(a);
      const auto* t = added_.find(a);
      if (t && t->id >= sp_size_) separate_strs_.insert(a);
    }
  } else {
    ids = {sp_.bos_id(), sp_.eos_id(), sp_.unk_id(), sp_.pad_id()};
  }
  for (const auto& s : special_strs_) {
    if (const auto* t = added_.find(s))
      special_ids_.insert(t->id);
    else if (int id = sp_.PieceToId(s); id >= 0 && sp_.IdToPiece(id) == s)
      special_ids_.insert(id);
  }
  return ids;
}

void SentencePieceTokenizer::choose_ids(const TokenizerOptions& opts, const td::DirConfig& cfg, const SpecialIds& ids) {
  bos_ = opts.bos_id.value_or(cfg.bos_id.value_or(ids.bos));
  eos_ = opts.eos_id.value_or(cfg.eos_id.value_or(ids.eos));
  pad_ = opts.pad_id.value_or(cfg.pad_id.value_or(ids.pad));
  unk_ = opts.unk_id.value_or(ids.unk);
  // LlamaTokenizer reads add_bos_token / add_eos_token; T5Tokenizer has no such flags and always
  // appends </s>, so for it they change nothing.
  const bool t5 = style_ == Style::T5;
  add_bos_ = opts.add_bos.value_or(t5 ? false : cfg.add_bos.value_or(true));
  add_eos_ = opts.add_eos.value_or(t5 ? true : cfg.add_eos.value_or(false));
  if (add_bos_ && bos_ < 0) add_bos_ = false;
  if (add_eos_ && eos_ < 0) add_eos_ = false;
  auto known = [&](int32_t id) { return id >= 0 && id < vocab_ && (id < sp_size_ || added_.by_id(id)); };
  if (add_bos_) td::check_emitted_id(bos_, known(bos_), "sentencepiece tokenizer: " + path_ + ": the BOS id");
  if (add_eos_) td::check_emitted_id(eos_, known(eos_), "sentencepiece tokenizer: " + path_ + ": the EOS id");
}

int32_t SentencePieceTokenizer::resolve(const std::string& token) {
  if (const auto* t = added_.find(token)) return t->id;
  const int id = sp_.PieceToId(token);
  td::AddedToken t;
  t.content = token;
  if (id >= 0 && id < sp_size_ && sp_.IdToPiece(id) == token) {
    t.id = id;
  } else {
    t.id = vocab_++;  // not in the model: HF appends it after the vocabulary
  }
  added_.add(t);
  return t.id;
}

std::vector<std::string> SentencePieceTokenizer::sp_pieces(const std::string& text) const {
  std::vector<std::string> pieces;
  const auto st = sp_.Encode(text, &pieces);
  if (!st.ok()) throw Error("sentencepiece tokenizer (" + path_ + "): encode failed: " + status_text(st));
  return pieces;
}

std::string SentencePieceTokenizer::sp_decode(const std::vector<std::string>& pieces) const {
  std::string out;
  if (pieces.empty()) return out;
  const auto st = sp_.Decode(pieces, &out);
  if (!st.ok()) throw Error("sentencepiece tokenizer (" + path_ + "): decode failed: " + status_text(st));
  return out;
}

std::vector<std::string> SentencePieceTokenizer::hf_inner_tokenize(const std::string& text) const {
  if (legacy_ || !(td::starts_with(text, kSpaceSymbol) || td::starts_with(text, " "))) return sp_pieces(text);
  // legacy=False: encode "<unk>" + text so a leading space survives, then drop the "<unk>" pieces.
  auto pieces = sp_pieces(unk_token_ + text);
  if (pieces.size() >= unk_token_length_) pieces.erase(pieces.begin(), pieces.begin() + unk_token_length_);
  return pieces;
}

std::vector<std::string> SentencePieceTokenizer::hf_tokenize(const std::string& text) const {
  std::vector<std::string> out;
  for (auto& chunk : added_.split(text)) {
    if (chunk.added) {
      out.push_back(std::move(chunk.text));
    } else {
      auto pieces = hf_inner_tokenize(chunk.text);
      out.insert(out.end(), std::make_move_iterator(pieces.begin()), std::make_move_iterator(pieces.end()));
    }
  }
  return out;
}

std::vector<std::string> SentencePieceTokenizer::tokenize(const std::string& text_in) const {
  const std::string text = td::utf8_lossy(text_in);
  if (style_ == Style::Plain) return sp_pieces(text);
  if (legacy_ || text.empty()) return hf_tokenize(text);
  std::string t = td::replace_all(text, kSpaceSymbol, " ");
  if (add_prefix_space_) t = kSpaceSymbol + t;
  auto tokens = hf_tokenize(t);
  if (tokens.size() > 1 && tokens[0] == kSpaceSymbol && special_strs_.count(tokens[1])) tokens.erase(tokens.begin());
  return tokens;
}

std::vector<int32_t> SentencePieceTokenizer::encode(const std::string& text, bool add_special) const {
  std::vector<int32_t> ids;
  if (add_special && add_bos_) ids.push_back(bos_);
  if (style_ == Style::Plain) {
    std::vector<int> raw;
    const auto st = sp_.Encode(td::utf8_lossy(text), &raw);
    if (!st.ok()) throw Error("sentencepiece tokenizer (" + path_ + "): encode failed: " + status_text(st));
    ids.insert(ids.end(), raw.begin(), raw.end());
  } else {
    for (const auto& tok : tokenize(text)) {
      if (const auto* a = added_.find(tok))
        ids.push_back(a->id);
      else
        ids.push_back(sp_.PieceToId(tok));
    }
  }
  if (add_special && add_eos_) {
    // T5Tokenizer only appends EOS when the sequence does not already end with it.
    if (style_ != Style::T5 || ids.empty() || ids.back() != eos_) ids.push_back(eos_);
  }
  return ids;
}

std::string SentencePieceTokenizer::id_to_piece(int32_t id) const {
  if (id < 0 || id >= vocab_) td::throw_bad_id("sentencepiece", id, vocab_);
  if (const auto* a = added_.by_id(id)) return a->content;
  if (id >= sp_size_) td::throw_bad_id("sentencepiece", id, vocab_);
  return sp_.IdToPiece(id);
}

std::string SentencePieceTokenizer::tokens_to_string(std::vector<std::string> tokens) const {
  if (add_prefix_space_ && td::starts_with(tokens[0], kSpaceSymbol)) tokens[0] = tokens[0].substr(kSpaceSymbol.size());
  std::string out;
  std::vector<std::string> cur;
  bool prev_special = false;
  for (size_t i = 0; i < tokens.size(); ++i) {
    const std::string& tok = tokens[i];
    if (special_strs_.count(tok)) {
      const bool space = style_ == Style::T5 ? !prev_special : (!prev_special && i != 0 && legacy_);
      if (space) out += ' ';
      out += sp_decode(cur) + tok;
      prev_special = true;
      cur.clear();
    } else {
      if (style_ == Style::Llama && prev_special && i == 1 && add_prefix_space_ && !td::starts_with(tok, kSpaceSymbol))
        out += ' ';
      cur.push_back(tok);
      prev_special = false;
    }
  }
  out += sp_decode(cur);
  return style_ == Style::T5 ? td::py_strip(out) : out;
}

std::string SentencePieceTokenizer::decode(const std::vector<int32_t>& ids, bool skip_special) const {
  for (int32_t id : ids)
    if (id < 0 || id >= vocab_ || (id >= sp_size_ && !added_.by_id(id))) td::throw_bad_id("sentencepiece", id, vocab_);
  if (style_ == Style::Plain) {
    std::vector<int> keep;
    for (int32_t id : ids)
      if (!(skip_special && special_ids_.count(id))) keep.push_back(id);
    std::string out;
    const auto st = sp_.Decode(keep, &out);
    if (!st.ok()) throw Error("sentencepiece tokenizer (" + path_ + "): decode failed: " + status_text(st));
    return out;
  }
  // PreTrainedTokenizer._decode: added tokens that are not special attributes (T5's extra ids) are
  // kept apart from the SentencePiece text and everything is joined with single spaces.
  std::vector<std::string> sub_texts, cur;
  for (int32_t id : ids) {
    if (skip_special && special_ids_.count(id)) continue;
    const auto* a = added_.by_id(id);
    std::string tok = a ? a->content : sp_.IdToPiece(id);
    if (skip_special && special_strs_.count(tok)) continue;
    if (separate_strs_.count(tok)) {
      if (!cur.empty()) {
        std::string s = tokens_to_string(std::move(cur));
        if (!s.empty()) sub_texts.push_back(std::move(s));
        cur.clear();
      }
      sub_texts.push_back(std::move(tok));
    } else {
      cur.push_back(std::move(tok));
    }
  }
  if (!cur.empty()) sub_texts.push_back(tokens_to_string(std::move(cur)));
  std::string out;
  for (size_t i = 0; i < sub_texts.size(); ++i) {
    if (i) out += ' ';
    out += sub_texts[i];
  }
  return out;
}

}  // namespace

std::unique_ptr<Tokenizer> td::make_sentencepiece(const std::string& model_file, const TokenizerOptions& opts,
                                                  const DirConfig& cfg) {
  return std::make_unique<SentencePieceTokenizer>(model_file, opts, cfg);
}

std::unique_ptr<Tokenizer> td::make_sentencepiece_proto(const std::string& proto, const std::string& source,
                                                        const TokenizerOptions& opts, const DirConfig& cfg) {
  return std::make_unique<SentencePieceTokenizer>(source, opts, cfg, &proto);
}

std::unique_ptr<Tokenizer> load_sentencepiece(const std::string& model_file, const TokenizerOptions& opts) {
  return with_ordo_errors("sentencepiece tokenizer: " + model_file,
                          [&] { return td::make_sentencepiece(model_file, opts, td::DirConfig{}); });
}

}  // namespace ordo
