// Internal helpers shared by the tokenizer implementations (not installed).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "ordo/tensor.hpp"
#include "ordo/tokenizer.hpp"
#include "leftmost_longest.hpp"

namespace ordo::tokenizer_detail {

// ---- files -------------------------------------------------------------------------------------
// Largest tokenizer file ordo reads (tokenizer.json of the biggest vocabularies is ~20 MB).
constexpr uint64_t kMaxTokenizerFileBytes = uint64_t{1} << 30;
std::string read_file(const std::string& path);  // regular files only; throws Error naming the path
// read_file + the JSON depth/size limits of ordo/input.hpp + parse; Error naming the path.
nlohmann::json read_json_file(const std::string& path);
bool file_exists(const std::string& path);  // present and not a directory
std::string join_path(const std::string& dir, const std::string& name);

// ---- UTF-8 -------------------------------------------------------------------------------------
// Appends the UTF-8 encoding of cp.
void append_utf8(std::string& out, char32_t cp);
// Decodes the code point at s[i] and advances i; an ill-formed or truncated sequence gives U+FFFD
// and advances past its maximal subpart (as utf8_lossy), never past the end of s.
char32_t next_cp(const std::string& s, size_t& i);
// Replaces every ill-formed subsequence with U+FFFD the way Python's bytes.decode("utf-8",
// errors="replace") does (one U+FFFD per maximal subpart).
std::string utf8_lossy(const std::string& bytes);
bool ends_with(const std::string& s, const std::string& suffix);
bool starts_with(const std::string& s, const std::string& prefix);
std::string replace_all(std::string s, const std::string& from, const std::string& to);

// ---- Python str semantics ----------------------------------------------------------------------
bool py_isspace(char32_t cp);  // str.isspace()
std::string py_strip(const std::string& s);
std::string py_lstrip(const std::string& s);
std::string py_rstrip(const std::string& s);

// ---- added tokens (HF PreTrainedTokenizer.tokenize special-token splitting) ---------------------
struct AddedToken {
  std::string content;
  int32_t id = -1;
  bool special = true;
  bool lstrip = false, rstrip = false, single_word = false;
};

class AddedTokens {
 public:
  void add(const AddedToken& t);  // replaces an entry with the same content
  const AddedToken* find(const std::string& content) const;
  const AddedToken* by_id(int32_t id) const;
  bool empty() const { return tokens_.empty(); }
  const std::vector<AddedToken>& all() const { return tokens_; }

  struct Chunk {
    std::string text;
    bool added = false;  // text is the content of an added token
  };
  // Splits text on added-token contents (leftmost-longest, like HF's Trie.split), then applies the
  // tokens' lstrip/rstrip/single_word rules and drops empty chunks, as PreTrainedTokenizer.tokenize.
  std::vector<Chunk> split(const std::string& text) const;

 private:
  std::vector<AddedToken> tokens_;
  std::unordered_map<std::string, size_t> by_content_;
  std::unordered_map<int32_t, size_t> by_id_;
  // Built on first split() after an add(); shared_ptr so a split in progress keeps its own.
  struct Cache {
    std::mutex mu;
    std::shared_ptr<const LeftmostLongest> matcher;
    Cache() = default;
    Cache(const Cache&) {}  // a copy rebuilds its own
    Cache& operator=(const Cache&) {
      std::lock_guard<std::mutex> lock(mu);
      matcher.reset();
      return *this;
    }
  };
  mutable Cache cache_;
};

// ---- configuration read from a model directory -------------------------------------------------
struct DirConfig {
  // tokenizer_config.json
  std::optional<bool> legacy, do_lower_case, add_bos, add_eos, add_prefix_space, strip_accents,
      tokenize_chinese_chars;
  std::optional<int> extra_ids;
  std::optional<std::string> tokenizer_class;
  std::optional<std::string> bos_token, eos_token, unk_token, pad_token, cls_token, sep_token, mask_token;
  std::vector<AddedToken> added_tokens;  // added_tokens_decoder
  // config.json / generation_config.json (generation_config wins)
  std::optional<std::string> model_type;
  std::optional<int32_t> bos_id, eos_id, pad_id;
};
DirConfig read_dir_config(const std::string& dir);

// Internal loaders: the public ones call these with an empty DirConfig.
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

// ---- token ids from files ---------------------------------------------------------------------
// How far ids may run past the number of tokens a file lists: the id table is sized by the largest
// id, so this bounds what a crafted id (10^8, 2^31-1) makes ordo allocate.
constexpr int64_t kMaxIdGap = 65536;
// A JSON integer that fits int32_t (and is >= 0 unless allow_negative); Error naming `where`.
int32_t json_token_id(const nlohmann::json& v, const std::string& where, bool allow_negative = false);
// A decimal token id written as text (added_tokens_decoder keys); Error naming `where`.
int32_t parse_token_id(const std::string& text, const std::string& where);
// Error "<where>: token id N is out of range ..." unless 0 <= id < listed + kMaxIdGap (`where`
// starts with the tokenizer kind and file).
void check_id_limit(int64_t id, size_t listed, const std::string& where);
// Error unless `known`: an id encode() would emit (a BOS/EOS/unk/template id) must be one decode()
// accepts. `where` names its origin, e.g. "eos_token_id from config.json".
void check_emitted_id(int32_t id, bool known, const std::string& where);

// Helper: error for an id outside [0, vocab).
[[noreturn]] void throw_bad_id(const char* kind, int32_t id, int32_t vocab);

}  // namespace ordo::tokenizer_detail
