// The tokenizer a tokenizer.json describes, run as tokenizers' Tokenizer::encode / decode:
// added tokens split out, then per remaining piece normalizer -> added tokens on the normalized
// text -> pre-tokenizer -> model; the post-processor adds the special tokens; decode maps ids to
// tokens and runs the decoder chain (tokens joined with spaces when there is no decoder).
#include <algorithm>
#include <tuple>
#include <unordered_set>

#include "hf.hpp"

namespace ordo::tokenizer_detail::hf {

namespace {

// The fast tokenizer classes whose __init__ rebuilds the post-processor as
// [bos] $A [eos] from add_bos_token / add_eos_token (update_post_processor in transformers 4.47:
// Llama, CodeLlama, Gemma, Cohere; GPT-NeoX), with their defaults for an absent flag. Without a
// tokenizer_class, AutoTokenizer picks the class from config.json's model_type.
std::optional<std::pair<bool, bool>> rebuilt_template_defaults(const DirConfig& cfg) {
  std::string cls = cfg.tokenizer_class.value_or("");
  if (cls.size() > 4 && cls.compare(cls.size() - 4, 4, "Fast") == 0) cls.resize(cls.size() - 4);
  if (cls.empty()) {
    static const std::unordered_map<std::string, const char*> kByModelType = {
        {"llama", "LlamaTokenizer"},           {"mistral", "LlamaTokenizer"},
        {"mixtral", "LlamaTokenizer"},         {"phi3", "LlamaTokenizer"},
        {"phimoe", "LlamaTokenizer"},          {"persimmon", "LlamaTokenizer"},
        {"jamba", "LlamaTokenizer"},           {"jetmoe", "LlamaTokenizer"},
        {"zamba", "LlamaTokenizer"},           {"chameleon", "LlamaTokenizer"},
        {"idefics", "LlamaTokenizer"},         {"idefics2", "LlamaTokenizer"},
        {"idefics3", "LlamaTokenizer"},        {"llava", "LlamaTokenizer"},
        {"llava_next", "LlamaTokenizer"},      {"llava_next_video", "LlamaTokenizer"},
        {"llava_onevision", "LlamaTokenizer"}, {"video_llava", "LlamaTokenizer"},
        {"vipllava", "LlamaTokenizer"},        {"mllama", "LlamaTokenizer"},
        {"paligemma", "LlamaTokenizer"},       {"code_llama", "CodeLlamaTokenizer"},
        {"gemma", "GemmaTokenizer"},           {"gemma2", "GemmaTokenizer"},
        {"recurrent_gemma", "GemmaTokenizer"}, {"cohere", "CohereTokenizer"},
        {"gpt_neox", "GPTNeoXTokenizer"},      {"falcon_mamba", "GPTNeoXTokenizer"},
        {"mamba", "GPTNeoXTokenizer"},         {"mamba2", "GPTNeoXTokenizer"},
        {"mpt", "GPTNeoXTokenizer"},           {"olmo", "GPTNeoXTokenizer"},
        {"olmo2", "GPTNeoXTokenizer"},         {"olmoe", "GPTNeoXTokenizer"},
        {"rwkv", "GPTNeoXTokenizer"},          {"stablelm", "GPTNeoXTokenizer"}};
    auto it = kByModelType.find(cfg.model_type.value_or(""));
    if (it != kByModelType.end()) cls = it->second;
  }
  if (cls == "LlamaTokenizer" || cls == "CodeLlamaTokenizer" || cls == "GemmaTokenizer" || cls == "CohereTokenizer")
    return std::make_pair(true, false);
  if (cls == "GPTNeoXTokenizer") return std::make_pair(false, false);
  return std::nullopt;
}

class Pipeline final : public Tokenizer {
 public:
  Pipeline(PipelineParts p, const TokenizerOptions& opts, const DirConfig& cfg);

  const char* kind() const override { return p_.model->kind(); }
  std::vector<int32_t> encode(const std::string& text, bool add_special) const override {
    std::vector<Token> toks = run(text);
    if (add_special) add_specials(toks);
    std::vector<int32_t> ids;
    ids.reserve(toks.size());
    for (const auto& t : toks) ids.push_back(t.id);
    return ids;
  }
  std::vector<std::string> tokenize(const std::string& text) const override {
    std::vector<std::string> out;
    for (auto& t : run(text)) out.push_back(std::move(t.value));
    return out;
  }
  std::string decode(const std::vector<int32_t>& ids, bool skip_special) const override;
  int32_t vocab_size() const override { return vocab_size_; }
  std::string id_to_piece(int32_t id) const override { return token_of(id); }

 private:
  std::vector<Token> run(const std::string& text) const;
  void add_specials(std::vector<Token>& toks) const;
  void model_tokens(const std::string& s, bool at_start, std::vector<Token>& out) const;
  const std::string& token_of(int32_t id) const;  // Error naming the id if there is none
  int32_t resolve_special(const std::string& s);

  PipelineParts p_;
  AddedVocabulary added_;
  AddedTokens slow_added_;
  std::unordered_set<int32_t> special_ids_;
  int32_t vocab_size_ = 0;
  // true: prefix_ + text + suffix_ (no post-processor, or a class that rebuilds it from the flags);
  // false: the file's post-processor, then the caller's add_bos/add_eos add or drop only BOS/EOS.
  bool manual_specials_ = false;
  std::vector<Token> prefix_, suffix_;
  std::optional<bool> want_bos_, want_eos_;  // TokenizerOptions::add_bos / add_eos
  size_t lead_ = 0, trail_ = 0;              // tokens the post-processor puts before / after the text
};

Pipeline::Pipeline(PipelineParts p, const TokenizerOptions& opts, const DirConfig& cfg) : p_(std::move(p)) {
  for (const auto& e : p_.added) added_.add(e);
  for (const auto& t : cfg.added_tokens) {
    if (added_.find(t.content)) continue;
    check_id_limit(t.id, static_cast<size_t>(p_.model->size()),
                   "tokenizer: " + p_.source + ": tokenizer_config.json added token '" + t.content + "'");
    AddedEntry e{t.content, t.id, t.special, t.single_word, t.lstrip, t.rstrip, !t.special};
    added_.add(e);
  }
  vocab_size_ = p_.model->size();
  for (const auto& e : added_.all()) vocab_size_ = std::max(vocab_size_, e.id + 1);

  const std::string bos = cfg.bos_token.value_or(p_.bos), eos = cfg.eos_token.value_or(p_.eos);
  const std::string unk = cfg.unk_token.value_or(p_.unk.empty() ? p_.model->unk_token().value_or("") : p_.unk);
  const std::string pad = cfg.pad_token.value_or(p_.pad);
  const int32_t bos_tok = resolve_special(bos), eos_tok = resolve_special(eos), unk_tok = resolve_special(unk),
                pad_tok = resolve_special(pad);
  for (const auto& e : added_.all()) {
    if (e.special) special_ids_.insert(e.id);
    if (p_.slow_added_tokens)
      slow_added_.add(AddedToken{e.content, e.id, e.special, e.lstrip, e.rstrip, e.single_word});
  }
  added_.build(p_.normalizer.get());

  bos_ = opts.bos_id.value_or(cfg.bos_id.value_or(bos_tok));
  eos_ = opts.eos_id.value_or(cfg.eos_id.value_or(eos_tok));
  pad_ = opts.pad_id.value_or(cfg.pad_id.value_or(pad_tok));
  unk_ = opts.unk_id.value_or(unk_tok);
  // tokenizer_config.json's add_bos_token / add_eos_token mean something only to the classes that
  // read them: the fast classes that rebuild the post-processor from them, and the slow GPT-2
  // tokenizer (vocab.json + merges.txt), which reads add_bos_token. For any other class (Whisper's,
  // PreTrainedTokenizerFast) they change nothing: the file's post-processor stays, its template's
  // other tokens included.
  std::optional<bool> add_bos, add_eos;
  const auto rebuilt = p_.slow_added_tokens ? std::nullopt : rebuilt_template_defaults(cfg);
  if (rebuilt) add_bos = cfg.add_bos.value_or(rebuilt->first), add_eos = cfg.add_eos.value_or(rebuilt->second);
  if (p_.slow_added_tokens) add_bos = cfg.add_bos;
  manual_specials_ = rebuilt || !p_.post_processor;
  // The caller's options name BOS and EOS only, whichever way the specials are added.
  if (opts.add_bos) add_bos = want_bos_ = opts.add_bos;
  if (opts.add_eos) add_eos = want_eos_ = opts.add_eos;
  for (auto [want, id, dst] : {std::tuple{add_bos, bos_, &prefix_}, {add_eos, eos_, &suffix_}}) {
    if (!want.value_or(false) || id < 0) continue;
    if (id >= vocab_size_) throw_bad_id(kind(), id, vocab_size_);
    dst->push_back({id, token_of(id)});
  }
  // Every id the post-processor adds must be one decode() accepts.
  std::vector<Token> specials;
  if (p_.post_processor) {
    p_.post_processor->process(specials);
    std::vector<Token> probe{{-1, ""}};  // where the text goes in the template
    p_.post_processor->process(probe);
    for (size_t i = 0; i < probe.size(); ++i)
      if (probe[i].id == -1) lead_ = i, trail_ = probe.size() - i - 1;
  }
  for (const Token& t : specials) {
    const bool known = t.id >= 0 && t.id < vocab_size_ && (added_.by_id(t.id) || p_.model->id_to_token(t.id));
    check_emitted_id(t.id, known, "tokenizer: " + p_.source + ": the post-processor's special token '" + t.value + "'");
  }
}

void Pipeline::add_specials(std::vector<Token>& toks) const {
  if (manual_specials_) {
    toks.insert(toks.begin(), prefix_.begin(), prefix_.end());
    toks.insert(toks.end(), suffix_.begin(), suffix_.end());
    return;
  }
  p_.post_processor->process(toks);
  // The options' add_bos / add_eos: BOS among the tokens the template puts before the text, EOS
  // among those after it, or not; the template's other tokens and the text's own stay.
  if (want_bos_) {
    const auto end = toks.begin() + static_cast<std::ptrdiff_t>(lead_);
    const auto it = std::find_if(toks.begin(), end, [&](const Token& t) { return t.id == bos_; });
    if (!*want_bos_ && it != end) toks.erase(it);
    if (*want_bos_ && it == end && !prefix_.empty()) toks.insert(toks.begin(), prefix_.front());
  }
  if (want_eos_) {
    const auto begin = toks.end() - static_cast<std::ptrdiff_t>(trail_);
    const auto it = std::find_if(begin, toks.end(), [&](const Token& t) { return t.id == eos_; });
    if (!*want_eos_ && it != toks.end()) toks.erase(it);
    if (*want_eos_ && it == toks.end() && !suffix_.empty()) toks.push_back(suffix_.back());
  }
}

int32_t Pipeline::resolve_special(const std::string& s) {
  if (s.empty()) return -1;
  if (const auto* a = added_.find(s)) return a->id;
  AddedEntry e;
  e.content = s;
  e.special = true;
  e.normalized = false;
  if (auto id = p_.model->token_to_id(s))
    e.id = *id;
  else
    e.id = vocab_size_++;  // not in the vocabulary: appended after it, as transformers does
  added_.add(e);
  return e.id;
}

const std::string& Pipeline::token_of(int32_t id) const {
  if (const auto* a = added_.by_id(id)) return a->content;
  if (const std::string* t = p_.model->id_to_token(id)) return *t;
  throw_bad_id(kind(), id, vocab_size_);
}

void Pipeline::model_tokens(const std::string& s, bool at_start, std::vector<Token>& out) const {
  std::vector<Piece> pieces{{s, at_start}};
  if (p_.pre_tokenizer) p_.pre_tokenizer->pre_tokenize(pieces);
  for (const auto& piece : pieces)
    if (!piece.text.empty()) p_.model->tokenize(piece.text, out);
}

std::vector<Token> Pipeline::run(const std::string& text_in) const {
  const std::string text = utf8_lossy(text_in);
  std::vector<Token> out;
  if (p_.slow_added_tokens) {  // PreTrainedTokenizer.tokenize's splitting; no normalizer here
    for (const auto& chunk : slow_added_.split(text)) {
      if (chunk.added)
        out.push_back({slow_added_.find(chunk.text)->id, chunk.text});
      else
        model_tokens(chunk.text, false, out);
    }
    return out;
  }
  for (const auto& raw : added_.split(text, false)) {
    if (raw.id >= 0) {
      out.push_back({raw.id, text.substr(raw.begin, raw.end - raw.begin)});
      continue;
    }
    std::string piece = text.substr(raw.begin, raw.end - raw.begin);
    if (p_.normalizer) piece = p_.normalizer->normalize(std::move(piece));
    for (const auto& sub : added_.split(piece, true)) {
      std::string s = piece.substr(sub.begin, sub.end - sub.begin);
      if (sub.id >= 0)
        out.push_back({sub.id, std::move(s)});
      else if (!s.empty())
        model_tokens(s, raw.begin == 0 && sub.begin == 0, out);
    }
  }
  return out;
}

std::string Pipeline::decode(const std::vector<int32_t>& ids, bool skip_special) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int32_t id : ids) {
    const std::string& t = token_of(id);
    if (skip_special && special_ids_.count(id)) continue;
    tokens.push_back(t);
  }
  if (!p_.decoder) {
    std::string out;
    for (size_t i = 0; i < tokens.size(); ++i) out += (i ? " " : "") + tokens[i];
    return out;
  }
  p_.decoder->decode_chain(tokens);
  std::string out;
  for (const auto& t : tokens) out += t;
  return out;
}

AddedEntry added_entry(const json& a, const std::string& where) {
  if (!a.is_object()) fail(where, "must be a JSON object");
  const int64_t id = get_int(a, "id", where, -1);
  if (id < 0 || id >= kMaxId) fail(where + ".id", "must be an integer with 0 <= id < 2^24, got " + std::to_string(id));
  AddedEntry e;
  e.id = static_cast<int32_t>(id);
  e.content = get_string(a, "content", where);
  if (e.content.empty()) fail(where + ".content", "must be a non-empty string");
  e.special = get_bool(a, "special", where, false);
  e.single_word = get_bool(a, "single_word", where, false);
  e.lstrip = get_bool(a, "lstrip", where, false);
  e.rstrip = get_bool(a, "rstrip", where, false);
  e.normalized = get_bool(a, "normalized", where, !e.special);
  return e;
}

}  // namespace

std::unique_ptr<Tokenizer> make_pipeline(PipelineParts parts, const TokenizerOptions& opts, const DirConfig& cfg) {
  return std::make_unique<Pipeline>(std::move(parts), opts, cfg);
}

}  // namespace ordo::tokenizer_detail::hf

namespace ordo::tokenizer_detail {

std::unique_ptr<Tokenizer> make_tokenizer_json(const std::string& path, const TokenizerOptions& opts,
                                               const DirConfig& cfg) {
  using namespace hf;
  const json j = read_json_file(path);  // size and nesting limits checked
  if (!j.is_object() || !j.contains("model")) fail(path, "no 'model' field");
  PipelineParts p;
  p.source = path;
  auto part = [&](const char* key) -> const json& {
    static const json null_json;
    return j.contains(key) ? j[key] : null_json;
  };
  p.model = make_model(j["model"], path + ": model");
  p.normalizer = make_normalizer(part("normalizer"), path + ": normalizer");
  p.pre_tokenizer = make_pre_tokenizer(part("pre_tokenizer"), path + ": pre_tokenizer");
  p.post_processor = make_post_processor(part("post_processor"), path + ": post_processor");
  p.decoder = make_decoder(part("decoder"), path + ": decoder");
  const json& added = part("added_tokens");
  if (!added.is_null() && !added.is_array()) fail(path + ": added_tokens", "must be a list");
  for (size_t i = 0; i < added.size(); ++i)
    p.added.push_back(added_entry(added[i], path + ": added_tokens[" + std::to_string(i) + "]"));
  return make_pipeline(std::move(p), opts, cfg);
}

}  // namespace ordo::tokenizer_detail
