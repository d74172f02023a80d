// load_tokenizer_lists(): a GGUF file's tokenizer.ggml.* lists as a tokenizer. The "llama" kind is
// written as the sentencepiece ModelProto it was converted from (BPE over the scored pieces, the
// identity normalizer Llama's tokenizer.model uses) and read by the SentencePiece tokenizer; the
// "gpt2" kind runs on the byte-level BPE pipeline bpe_tokenizer.cpp builds.
#include <cstring>

#include "gguf_tokenizer.hpp"
#include "hf/hf.hpp"
#include "ordo/input.hpp"

namespace ordo {
namespace td = tokenizer_detail;
namespace hf = tokenizer_detail::hf;

namespace {

// Protocol-buffer wire format, just what a ModelProto needs.
void varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out += static_cast<char>((v & 0x7F) | 0x80);
    v >>= 7;
  }
  out += static_cast<char>(v);
}
void key(std::string& out, int field, int wire) { varint(out, static_cast<uint64_t>(field) << 3 | wire); }
void int_field(std::string& out, int field, int64_t v) {
  key(out, field, 0);
  varint(out, static_cast<uint64_t>(v));  // negative int32: ten bytes, as protobuf writes them
}
void bytes_field(std::string& out, int field, const std::string& v) {
  key(out, field, 2);
  varint(out, v.size());
  out += v;
}
void float_field(std::string& out, int field, float v) {
  key(out, field, 5);
  char b[4];
  std::memcpy(b, &v, 4);
  out.append(b, 4);
}

int32_t find_type(const VocabLists& v, int32_t type) {
  for (size_t i = 0; i < v.types.size(); ++i)
    if (v.types[i] == type) return static_cast<int32_t>(i);
  return -1;
}

// ModelProto { pieces = 1; trainer_spec = 2; normalizer_spec = 3 }.
std::string llama_proto(const VocabLists& v, const std::string& source) {
  const size_t n = v.tokens.size();
  if (n == 0) throw Error(source + ": tokenizer.ggml.tokens is empty");
  if (v.scores.size() != n || v.types.size() != n)
    throw Error(source + ": tokenizer.ggml.tokens has " + std::to_string(n) +
                " entries but tokenizer.ggml.scores has " + std::to_string(v.scores.size()) +
                " and tokenizer.ggml.token_type " + std::to_string(v.types.size()));
  std::string proto;
  for (size_t i = 0; i < n; ++i) {
    const int32_t t = v.types[i];
    if (t < 1 || t > 6)
      throw Error(source + ": tokenizer.ggml.token_type[" + std::to_string(i) + "] = " + std::to_string(t) +
                  " is not a SentencePiece piece type (1..6)");
    if (v.tokens[i].empty()) throw Error(source + ": tokenizer.ggml.tokens[" + std::to_string(i) + "] is empty");
    std::string piece;
    bytes_field(piece, 1, v.tokens[i]);
    float_field(piece, 2, v.scores[i]);
    int_field(piece, 3, t);
    bytes_field(proto, 1, piece);
  }
  const int32_t unk = v.unk_id.value_or(find_type(v, 2));
  if (unk < 0 || static_cast<size_t>(unk) >= n || v.types[unk] != 2)
    throw Error(source + ": no unknown-token piece (tokenizer.ggml.unknown_token_id, token_type 2)");
  std::string trainer;
  int_field(trainer, 3, 2);  // model_type BPE: llama.cpp merges by score, as SentencePiece's BPE
  int_field(trainer, 4, static_cast<int64_t>(n));
  int_field(trainer, 35, find_type(v, 6) >= 0);  // byte_fallback
  int_field(trainer, 40, unk);
  auto id_or_none = [&](const std::optional<int32_t>& id) {
    return id && *id >= 0 && static_cast<size_t>(*id) < n ? *id : -1;
  };
  int_field(trainer, 41, id_or_none(v.bos_id));
  int_field(trainer, 42, id_or_none(v.eos_id));
  int_field(trainer, 43, id_or_none(v.pad_id));
  bytes_field(proto, 2, trainer);
  std::string norm;
  bytes_field(norm, 1, "identity");
  int_field(norm, 3, v.add_space_prefix.value_or(true));  // add_dummy_prefix
  int_field(norm, 4, 0);                                  // remove_extra_whitespaces: Llama's keep them
  int_field(norm, 5, 1);                                  // escape_whitespaces
  bytes_field(proto, 3, norm);
  return proto;
}

td::DirConfig special_config(const VocabLists& v, const char* model_type, bool add_bos) {
  td::DirConfig cfg;
  cfg.model_type = model_type;
  cfg.add_bos = v.add_bos.value_or(add_bos);
  cfg.add_eos = v.add_eos.value_or(false);
  auto piece = [&](const std::optional<int32_t>& id) -> std::optional<std::string> {
    if (id && *id >= 0 && static_cast<size_t>(*id) < v.tokens.size()) return v.tokens[*id];
    return std::nullopt;
  };
  cfg.bos_token = piece(v.bos_id);
  cfg.eos_token = piece(v.eos_id);
  cfg.unk_token = piece(v.unk_id);
  cfg.pad_token = piece(v.pad_id);
  cfg.bos_id = v.bos_id;
  cfg.eos_id = v.eos_id;
  cfg.pad_id = v.pad_id;
  return cfg;
}

// GPT-2's byte-level BPE (as bpe_tokenizer.cpp builds it from vocab.json + merges.txt).
std::unique_ptr<Tokenizer> gpt2_tokenizer(const VocabLists& v, const std::string& source,
                                          const TokenizerOptions& opts) {
  if (v.pre != "gpt-2" && v.pre != "default" && !v.pre.empty())
    throw Error(source + ": tokenizer.ggml.pre is '" + v.pre + "'; ordo reads GPT-2's pre-tokenizer ('gpt-2') only");
  hf::BpeConfig c;
  c.where = source;
  for (size_t i = 0; i < v.tokens.size(); ++i)
    if (!c.vocab.emplace(v.tokens[i], static_cast<int32_t>(i)).second)
      throw Error(source + ": tokenizer.ggml.tokens[" + std::to_string(i) + "] = '" + v.tokens[i] +
                  "' is listed twice");
  for (size_t i = 0; i < v.merges.size(); ++i)
    c.merges.push_back(
        hf::split_merge_line(v.merges[i], source + ": tokenizer.ggml.merges[" + std::to_string(i) + "]"));
  hf::PipelineParts p;
  p.source = source;
  p.model = hf::make_bpe_model(std::move(c));
  p.pre_tokenizer = hf::make_byte_level_pre_tokenizer(false);
  p.decoder = hf::make_byte_level_decoder();
  p.slow_added_tokens = true;
  p.bos = p.eos = p.unk = "<|endoftext|>";
  return hf::make_pipeline(std::move(p), opts, special_config(v, "gpt2", false));
}

}  // namespace

std::unique_ptr<Tokenizer> load_tokenizer_lists(const VocabLists& v, const std::string& source,
                                                const TokenizerOptions& opts) {
  return with_ordo_errors("tokenizer: " + source, [&] {
    if (v.model == "gpt2") {
      std::unique_ptr<Tokenizer> t = gpt2_tokenizer(v, source, opts);
      t->source_ = source;
      return t;
    }
    if (v.model != "llama")
      throw Error(source + ": tokenizer.ggml.model is '" + v.model + "'; ordo reads 'llama' and 'gpt2'");
    const td::DirConfig cfg = special_config(v, "llama", true);
    std::unique_ptr<Tokenizer> t = td::make_sentencepiece_proto(llama_proto(v, source), source, opts, cfg);
    t->source_ = source;
    return t;
  });
}

}  // namespace ordo
