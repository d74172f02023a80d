// Tokenizers: sentencepiece (libsentencepiece), Hugging Face tokenizer.json pipelines (any model
// type), byte-level BPE (GPT-2 vocab.json + merges.txt), WordPiece (BERT vocab.txt), Marian
// (source.spm + target.spm + vocab.json). load_tokenizer() picks one from the files a model
// directory holds.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ordo {

struct TokenizerOptions {
  // Special-token handling for encode(text, add_special=true). Unset: from the model directory
  // (tokenizer_config.json / config.json) or the tokenizer kind's usual default.
  std::optional<bool> add_bos, add_eos;
  std::optional<int32_t> bos_id, eos_id, pad_id, unk_id;
  // sentencepiece: HF LlamaTokenizer/T5Tokenizer `legacy` flag (default true, as HF).
  std::optional<bool> legacy;
  // sentencepiece: number of <extra_id_N> tokens appended after the vocabulary (T5: 100).
  std::optional<int> extra_ids;
  // WordPiece: lowercase and strip accents (default true).
  std::optional<bool> do_lower_case;
  // sentencepiece: which Hugging Face slow tokenizer to mirror: "llama" (LlamaTokenizer, the
  // default), "t5" (T5Tokenizer; the default when extra_ids > 0) or "plain" (bare SentencePiece
  // encode/decode: no special-token splitting, no HF prefix-space rules).
  std::optional<std::string> sp_style;
};

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  // "sentencepiece", "marian", or the tokenizer.json model: "bpe", "wordpiece", "unigram", "wordlevel"
  virtual const char* kind() const = 0;

  // Text to ids. add_special adds BOS/EOS/[CLS]/[SEP] as the tokenizer is configured to.
  virtual std::vector<int32_t> encode(const std::string& text, bool add_special = true) const = 0;
  // Token strings (pieces) as HF tokenizer.tokenize() gives them.
  virtual std::vector<std::string> tokenize(const std::string& text) const = 0;
  // Ids to text (HF decode with skip_special_tokens and no clean-up of spaces).
  // Throws Error naming the id if it is outside the vocabulary.
  virtual std::string decode(const std::vector<int32_t>& ids, bool skip_special = false) const = 0;
  virtual int32_t vocab_size() const = 0;
  virtual std::string id_to_piece(int32_t id) const = 0;

  int32_t bos_id() const { return bos_; }
  int32_t eos_id() const { return eos_; }
  int32_t pad_id() const { return pad_; }
  int32_t unk_id() const { return unk_; }
  // The file load_tokenizer read the vocabulary from ("<dir>/tokenizer.json", ...; "" otherwise),
  // for messages about the tokenizer.
  const std::string& source() const { return source_; }

 protected:
  int32_t bos_ = -1, eos_ = -1, pad_ = -1, unk_ = -1;

 private:
  std::string source_;
  friend std::unique_ptr<Tokenizer> load_tokenizer(const std::string& dir, const TokenizerOptions& opts);
  friend std::unique_ptr<Tokenizer> load_tokenizer_lists(const struct VocabLists& v, const std::string& source,
                                                         const TokenizerOptions& opts);
};

// Streams decoded text token by token. push() returns only complete UTF-8 text: bytes of a
// character split over several byte-fallback tokens are held back until the character completes.
// The concatenation of all push() results and flush() equals the text decode() adds for the pushed
// ids after `context` (ids already shown, e.g. the prompt, so a leading space is kept or dropped as
// the full decode would). Each push() decodes a window of recent ids: those since the last id that
// can start a window (at most 64 where an anchor token can stand for the text before them) and
// those still held back (an incomplete character, T5's trailing spaces).
// Decoders whose output is not prefix-stable can only be followed approximately: HF's legacy Llama
// puts a space *before* an inline special token (skip_special avoids that case), and HF's
// ByteFallback shows every byte of a run as U+FFFD once one of them is invalid.
class StreamDecoder {
 public:
  explicit StreamDecoder(const Tokenizer& tok, std::vector<int32_t> context = {}, bool skip_special = false);
  std::string push(int32_t id);
  std::string flush();  // whatever is left (invalid trailing bytes become U+FFFD)

 private:
  bool skipped(int32_t id) const;
  bool good_start(size_t i) const;
  std::string window_text(size_t begin, size_t end) const;
  std::optional<std::string> decode_window(size_t end, const std::vector<int32_t>& after) const;
  bool restart_behind_anchor();
  bool shows_nothing(size_t i) const;
  std::string window_text_to(size_t end);
  std::string emit(size_t end, bool final);

  const Tokenizer& tok_;
  bool skip_special_ = false;
  std::vector<int32_t> ids_;  // the context and the pushed ids, without skipped specials
  size_t prefix_ids_ = 0;     // window start: ids_[prefix_ids_, read_ids_) are already emitted
  size_t read_ids_ = 0;
  std::string prefix_text_;  // the window's text up to read_ids_
  int32_t anchor_id_ = -1;   // decoded in front of the window when anchored_
  std::string anchor_text_;  // its text as the first token
  std::string anchor_join_;  // what a second anchor adds after it
  bool anchored_ = false;
  size_t run_start_ = 0;  // where the window started before it was first anchored
};

// Loads the tokenizer of a model directory (no weights needed), choosing by the files it holds:
// tokenizer.model / spiece.model (sentencepiece), source.spm + target.spm + vocab.json (Marian),
// tokenizer.json (any Hugging Face tokenizers pipeline), vocab.json + merges.txt (byte-level BPE),
// vocab.txt (WordPiece). Throws Error naming dir if none.
std::unique_ptr<Tokenizer> load_tokenizer(const std::string& dir, const TokenizerOptions& opts = {});

// A vocabulary held as lists, as a GGUF file stores it (tokenizer.ggml.*).
struct VocabLists {
  std::string model;                // tokenizer.ggml.model: "llama" (SentencePiece-style) or "gpt2" (byte-level BPE)
  std::string pre;                  // gpt2: tokenizer.ggml.pre, the pre-tokenizer ("gpt-2" and "default" are GPT-2's)
  std::vector<std::string> tokens;  // piece of each id
  std::vector<float> scores;        // llama: merge priority of each piece
  std::vector<int32_t> types;       // llama: 1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte
  std::vector<std::string> merges;  // gpt2: "a b", highest priority first
  std::optional<int32_t> bos_id, eos_id, unk_id, pad_id;
  std::optional<bool> add_bos, add_eos, add_space_prefix;
};
// The tokenizer those lists describe: for "llama", SentencePiece BPE over the pieces and scores
// (byte fallback when there are byte pieces), behaving as load_sentencepiece on the
// tokenizer.model they came from; for "gpt2" with GPT-2's pre-tokenizer, byte-level BPE over the
// tokens and merges as load_bpe on the vocab.json and merges.txt they came from (another
// pre-tokenizer, as Llama 3's or Qwen2's, is an Error naming it). Errors name `source` (the GGUF
// file) and the list at fault.
std::unique_ptr<Tokenizer> load_tokenizer_lists(const VocabLists& v, const std::string& source,
                                                const TokenizerOptions& opts = {});
// The reverse for a SentencePiece tokenizer.model, as llama.cpp's converter writes it: pieces, scores
// and types (1 normal, 2 unknown, 3 control, 5 unused, 6 byte), cut or padded with unused "[PADi]"
// pieces to `vocab_size` (<= 0: the model's own size). Special ids are left to the caller.
VocabLists sentencepiece_vocab_lists(const std::string& model_file, int64_t vocab_size = 0);

// Direct constructors, for tests and for callers who know the kind.
std::unique_ptr<Tokenizer> load_sentencepiece(const std::string& model_file, const TokenizerOptions& opts = {});
std::unique_ptr<Tokenizer> load_bpe(const std::string& vocab_json, const std::string& merges_txt,
                                    const TokenizerOptions& opts = {});
// Any Hugging Face tokenizer.json (BPE, WordPiece, Unigram or WordLevel model with its normalizer,
// pre-tokenizer, post-processor and decoder); a component it does not support is an Error naming it.
std::unique_ptr<Tokenizer> load_tokenizer_json(const std::string& tokenizer_json, const TokenizerOptions& opts = {});
std::unique_ptr<Tokenizer> load_bpe_tokenizer_json(const std::string& tokenizer_json,
                                                   const TokenizerOptions& opts = {});
std::unique_ptr<Tokenizer> load_wordpiece(const std::string& vocab_txt, const TokenizerOptions& opts = {});
// Marian / opus-mt (HF MarianTokenizer): dir holds source.spm, target.spm and vocab.json.
std::unique_ptr<Tokenizer> load_marian(const std::string& dir, const TokenizerOptions& opts = {});

}  // namespace ordo
