// Hugging Face `tokenizers` pipeline (tokenizer.json), internal: normalizer -> pre-tokenizer ->
// model -> post-processor, decoder for the way back, and the added-token vocabulary that is split
// out before all of them. Each component mirrors the Rust crate's behaviour (tokenizers 0.22) for
// ids, tokens and decoded text; offsets are not tracked (ordo does not expose them).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "../added_tokens.hpp"
#include "../dir_config.hpp"
#include "../files.hpp"
#include "../leftmost_longest.hpp"
#include "../loaders.hpp"
#include "../strings.hpp"
#include "../token_ids.hpp"
#include "../utf8.hpp"
#include "ordo/tensor.hpp"
#include "ordo/tokenizer.hpp"

namespace ordo::tokenizer_detail::hf {

using json = nlohmann::json;

// Largest vocabulary ordo accepts: ids index tables, so a hostile id must not size one.
constexpr int64_t kMaxId = int64_t{1} << 24;

// Throws Error("tokenizer: <where>: <what>"); `where` names the file and the field.
[[noreturn]] void fail(const std::string& where, const std::string& what);
// Typed field readers: a missing field gives `def`, a field of the wrong type is an Error naming it.
std::string get_string(const json& j, const char* key, const std::string& where, const std::string& def = "");
bool get_bool(const json& j, const char* key, const std::string& where, bool def);
int64_t get_int(const json& j, const char* key, const std::string& where, int64_t def);
std::string type_of(const json& j, const std::string& where);  // the component's "type"
// A one-character string field (Metaspace replacement, Strip content, ...).
char32_t get_char(const json& j, const char* key, const std::string& where, const std::string& def);
// The components of a Sequence: j[key] must be a list; make(item, where) builds each (null skipped).
template <class T, class Make>
std::vector<std::unique_ptr<T>> make_sequence(const json& j, const char* key, const std::string& where, Make make) {
  if (!j.contains(key) || !j[key].is_array()) fail(where, std::string("Sequence has no '") + key + "' list");
  std::vector<std::unique_ptr<T>> parts;
  for (size_t i = 0; i < j[key].size(); ++i) {
    auto p = make(j[key][i], where + "." + key + "[" + std::to_string(i) + "]");
    if (p) parts.push_back(std::move(p));
  }
  return parts;
}

// ---- Unicode character classes, as Rust's char methods / regex classes see them (unicode.cpp) ---
bool is_whitespace(char32_t c);               // char::is_whitespace (White_Space)
bool is_word_char(char32_t c);                // regex \w
bool is_punctuation(char32_t c);              // ASCII punctuation or a P* category
bool is_numeric(char32_t c);                  // char::is_numeric (Nd, Nl, No)
bool is_other(char32_t c);                    // tokenizers' is_other: Cc, Cf, Co (no Cn), 2016 tables
bool is_nonspacing_mark(char32_t c);          // Mn
bool is_mark(char32_t c);                     // Mn, Mc, Me
bool is_chinese_char(char32_t c);             // the CJK blocks BertNormalizer pads with spaces
std::string lowercase(const std::string& s);  // per code point (char::to_lowercase, no context)
enum class NormForm { NFC, NFD, NFKC, NFKD };
std::string unicode_normalize(const std::string& s, NormForm form);
// End offsets of the extended grapheme clusters (UAX #29) of valid UTF-8 `s`.
std::vector<size_t> grapheme_ends(const std::string& s);

// GPT-2's bytes_to_unicode(): every byte as a printable character (UTF-8), and back.
const std::array<std::string, 256>& byte_chars();
// Bytes of a byte-level token; nullopt when a character is not one of the 256.
std::optional<std::string> byte_level_bytes(const std::string& token);

// ---- PCRE2 (regex.cpp) -------------------------------------------------------------------------
class Regex {
 public:
  Regex(const std::string& pattern, bool literal, const std::string& where);
  // Non-overlapping non-empty matches, left to right, as [begin, end) byte offsets. s must be
  // valid UTF-8.
  std::vector<std::pair<size_t, size_t>> find_all(const std::string& s) const;
  std::string replace_all(const std::string& s, const std::string& with) const;

 private:
  std::shared_ptr<void> code_;
  std::string pattern_, where_;  // the pattern names itself in a match failure
};
// Regex from a {"String": s} or {"Regex": r} pattern object.
Regex make_pattern(const json& pattern, const std::string& where);
const char* gpt2_pattern();

// ---- splitting pieces (shared by pre-tokenizers) -----------------------------------------------
struct Span {
  size_t begin, end;
  bool match;
};
enum class SplitBehavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };
SplitBehavior split_behavior(const std::string& name, const std::string& where);
// Spans covering s: regex matches and the gaps between them.
std::vector<Span> regex_spans(const Regex& re, const std::string& s);
// Spans covering s: every character for which pred is true is a match of its own.
template <class Pred>
std::vector<Span> char_spans(const std::string& s, Pred pred) {
  std::vector<Span> out;
  size_t last = 0;
  for (size_t i = 0; i < s.size();) {
    const size_t b = i;
    if (pred(next_cp(s, i))) {
      if (last < b) out.push_back({last, b, false});
      out.push_back({b, i, true});
      last = i;
    }
  }
  if (last < s.size()) out.push_back({last, s.size(), false});
  return out;
}
// NormalizedString::split: the non-empty pieces the behavior keeps.
std::vector<std::pair<size_t, size_t>> apply_behavior(std::vector<Span> spans, SplitBehavior behavior, bool invert);

// ---- normalizers (normalizers.cpp) -------------------------------------------------------------
class Normalizer {
 public:
  virtual ~Normalizer() = default;
  virtual std::string normalize(std::string s) const = 0;
};
std::unique_ptr<Normalizer> make_normalizer(const json& j, const std::string& where);   // null for null
std::unique_ptr<Normalizer> make_precompiled(const json& j, const std::string& where);  // normalizer_precompiled.cpp

// ---- pre-tokenizers (pre_tokenizers.cpp) -------------------------------------------------------
struct Piece {
  std::string text;
  bool at_start = false;  // begins at offset 0 of the input (Metaspace prepend_scheme "first")
};
class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  virtual void pre_tokenize(std::vector<Piece>& pieces) const = 0;
};
std::unique_ptr<PreTokenizer> make_pre_tokenizer(const json& j, const std::string& where);
// ByteLevel with GPT-2's regex and no prefix space (vocab.json + merges.txt tokenizers).
std::unique_ptr<PreTokenizer> make_byte_level_pre_tokenizer(bool add_prefix_space);

// ---- models (model_*.cpp) ----------------------------------------------------------------------
struct Token {
  int32_t id;
  std::string value;
};
class Model {
 public:
  virtual ~Model() = default;
  virtual const char* kind() const = 0;  // "bpe", "wordpiece", "unigram", "wordlevel"
  virtual void tokenize(const std::string& s, std::vector<Token>& out) const = 0;
  virtual std::optional<int32_t> token_to_id(const std::string& token) const = 0;
  virtual const std::string* id_to_token(int32_t id) const = 0;  // null if the model has no such id
  virtual int32_t size() const = 0;                              // largest id + 1
  virtual std::optional<std::string> unk_token() const = 0;
};

// A model over a {token: id} vocabulary (BPE, WordPiece, WordLevel, Unigram's pieces).
class VocabModel : public Model {
 public:
  explicit VocabModel(std::unordered_map<std::string, int32_t> vocab);
  std::optional<int32_t> token_to_id(const std::string& token) const override;
  const std::string* id_to_token(int32_t id) const override;
  int32_t size() const override { return static_cast<int32_t>(tokens_.size()); }

 protected:
  std::unordered_map<std::string, int32_t> vocab_;
  std::vector<std::string> tokens_;  // by id
  std::vector<bool> has_;            // ids may have holes
};

struct BpeConfig {
  std::string where;
  std::unordered_map<std::string, int32_t> vocab;
  std::vector<std::pair<std::string, std::string>> merges;
  std::optional<std::string> unk_token, continuing_subword_prefix, end_of_word_suffix;
  bool fuse_unk = false, byte_fallback = false, ignore_merges = false;
};
std::unique_ptr<Model> make_bpe_model(BpeConfig cfg);
std::unique_ptr<Model> make_model(const json& j, const std::string& where);
std::unique_ptr<Model> make_wordpiece_model(const json& j, const std::string& where);
std::unique_ptr<Model> make_wordlevel_model(const json& j, const std::string& where);
std::unique_ptr<Model> make_unigram_model(const json& j, const std::string& where);
// Vocabulary object {token: id}; ids must be non-negative and unique.
std::unordered_map<std::string, int32_t> read_vocab_object(const json& j, const std::string& where);
// Merges as ["a b", ...] or [["a", "b"], ...].
std::vector<std::pair<std::string, std::string>> read_merges(const json& j, const std::string& where);
std::pair<std::string, std::string> split_merge_line(const std::string& line, const std::string& where);

// ---- post-processors (post_processors.cpp) -----------------------------------------------------
class PostProcessor {
 public:
  virtual ~PostProcessor() = default;
  // Adds the special tokens of a single sequence (called only when specials are wanted).
  virtual void process(std::vector<Token>& tokens) const = 0;
};
std::unique_ptr<PostProcessor> make_post_processor(const json& j, const std::string& where);

// ---- decoders (decoders.cpp) -------------------------------------------------------------------
class Decoder {
 public:
  virtual ~Decoder() = default;
  virtual void decode_chain(std::vector<std::string>& tokens) const = 0;
};
std::unique_ptr<Decoder> make_decoder(const json& j, const std::string& where);
std::unique_ptr<Decoder> make_byte_level_decoder();

// ---- added tokens, as tokenizers' AddedVocabulary (added_vocabulary.cpp) ------------------------
struct AddedEntry {
  std::string content;
  int32_t id = -1;
  bool special = false, single_word = false, lstrip = false, rstrip = false, normalized = true;
};
class AddedVocabulary {
 public:
  void add(const AddedEntry& e);  // replaces an entry with the same content
  // Call after the last add(): matches normalized tokens by their normalized content.
  void build(const Normalizer* normalizer);
  const AddedEntry* find(const std::string& content) const;
  const AddedEntry* by_id(int32_t id) const;
  const std::vector<AddedEntry>& all() const { return entries_; }

  struct Split {
    size_t begin, end;
    int32_t id;  // -1: plain text
  };
  // Splits s on the added tokens (raw ones, or the normalized ones), applying single_word and
  // lstrip/rstrip the way find_matches does.
  std::vector<Split> split(const std::string& s, bool normalized) const;

 private:
  std::vector<AddedEntry> entries_;
  std::unordered_map<std::string, size_t> by_content_;
  std::unordered_map<int32_t, size_t> by_id_;
  struct Patterns {
    LeftmostLongest matcher;
    std::vector<size_t> entry;  // pattern index -> entries_ index
  };
  Patterns raw_, norm_;
};

// ---- the whole tokenizer (pipeline.cpp) --------------------------------------------------------
struct PipelineParts {
  std::string source;  // file name, for messages
  std::unique_ptr<Normalizer> normalizer;
  std::unique_ptr<PreTokenizer> pre_tokenizer;
  std::unique_ptr<Model> model;
  std::unique_ptr<PostProcessor> post_processor;
  std::unique_ptr<Decoder> decoder;
  std::vector<AddedEntry> added;
  // Slow-tokenizer (PreTrainedTokenizer) added-token splitting instead of AddedVocabulary's:
  // vocab.json + merges.txt mirror GPT2Tokenizer.
  bool slow_added_tokens = false;
  // Special-token strings from tokenizer_config.json / the slow class's defaults.
  std::string bos, eos, unk, pad;
};
std::unique_ptr<Tokenizer> make_pipeline(PipelineParts parts, const TokenizerOptions& opts, const DirConfig& cfg);

}  // namespace ordo::tokenizer_detail::hf
