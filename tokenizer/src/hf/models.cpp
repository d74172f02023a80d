// tokenizer.json "model": dispatch by type, and the vocabulary / merges readers the models share.
#include <cctype>

#include "hf.hpp"

namespace ordo::tokenizer_detail::hf {

VocabModel::VocabModel(std::unordered_map<std::string, int32_t> vocab) : vocab_(std::move(vocab)) {
  int32_t max_id = -1;
  for (const auto& [t, id] : vocab_) max_id = std::max(max_id, id);
  tokens_.assign(static_cast<size_t>(max_id + 1), std::string());
  has_.assign(static_cast<size_t>(max_id + 1), false);
  for (const auto& [t, id] : vocab_) tokens_[id] = t, has_[id] = true;
}

std::optional<int32_t> VocabModel::token_to_id(const std::string& token) const {
  auto it = vocab_.find(token);
  return it == vocab_.end() ? std::nullopt : std::optional<int32_t>(it->second);
}

const std::string* VocabModel::id_to_token(int32_t id) const {
  return id >= 0 && id < size() && has_[id] ? &tokens_[id] : nullptr;
}

std::unordered_map<std::string, int32_t> read_vocab_object(const json& j, const std::string& where) {
  if (!j.is_object()) fail(where, "must be a JSON object of token -> id");
  std::unordered_map<std::string, int32_t> vocab;
  vocab.reserve(j.size());
  std::unordered_map<int32_t, std::string> seen;
  for (const auto& [tok, id] : j.items()) {
    if (!id.is_number_integer()) fail(where, "token '" + tok + "' has a non-integer id");
    const int64_t v = id.get<int64_t>();
    if (v < 0 || v >= kMaxId)
      fail(where, "token '" + tok + "' has id " + std::to_string(v) + " (out of range: 0 <= id < 2^24)");
    const auto i = static_cast<int32_t>(v);
    if (auto [it, fresh] = seen.emplace(i, tok); !fresh)
      fail(where, "tokens '" + it->second + "' and '" + tok + "' share id " + std::to_string(i));
    vocab.emplace(tok, i);
  }
  return vocab;
}

std::pair<std::string, std::string> split_merge_line(const std::string& line, const std::string& where) {
  // Python str.split(): any whitespace run separates.
  std::vector<std::string> parts;
  for (size_t i = 0; i < line.size();) {
    while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    const size_t b = i;
    while (i < line.size() && !std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    if (i > b) parts.push_back(line.substr(b, i - b));
  }
  if (parts.size() != 2) fail(where, "malformed merge '" + line + "'");
  return {parts[0], parts[1]};
}

std::vector<std::pair<std::string, std::string>> read_merges(const json& j, const std::string& where) {
  if (!j.is_array()) fail(where, "must be a list");
  std::vector<std::pair<std::string, std::string>> out;
  out.reserve(j.size());
  for (const auto& m : j) {
    if (m.is_string()) out.push_back(split_merge_line(m.get<std::string>(), where));
    else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string())
      out.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
    else fail(where, "entries must be \"a b\" or [a, b]");
  }
  return out;
}

namespace {
std::optional<std::string> opt_string(const json& j, const char* key, const std::string& where) {
  if (!j.contains(key) || j[key].is_null()) return std::nullopt;
  return get_string(j, key, where);
}
}  // namespace

std::unique_ptr<Model> make_model(const json& j, const std::string& where) {
  if (!j.is_object()) fail(where, "must be a JSON object");
  // Files written before "type" existed hold a BPE model.
  const std::string type = j.contains("type") ? type_of(j, where) : "BPE";
  if (type == "BPE") {
    BpeConfig c;
    c.where = where;
    if (!j.contains("vocab") || !j.contains("merges")) fail(where, "BPE model needs 'vocab' and 'merges'");
    c.vocab = read_vocab_object(j["vocab"], where + ".vocab");
    c.merges = read_merges(j["merges"], where + ".merges");
    c.unk_token = opt_string(j, "unk_token", where);
    c.continuing_subword_prefix = opt_string(j, "continuing_subword_prefix", where);
    c.end_of_word_suffix = opt_string(j, "end_of_word_suffix", where);
    c.fuse_unk = get_bool(j, "fuse_unk", where, false);
    c.byte_fallback = get_bool(j, "byte_fallback", where, false);
    c.ignore_merges = get_bool(j, "ignore_merges", where, false);
    if (j.contains("dropout") && !j["dropout"].is_null() && j["dropout"].is_number() && j["dropout"].get<double>() > 0)
      fail(where + ".dropout", "BPE dropout is random; ordo supports only deterministic tokenization (null or 0)");
    return make_bpe_model(std::move(c));
  }
  if (type == "WordPiece") return make_wordpiece_model(j, where);
  if (type == "WordLevel") return make_wordlevel_model(j, where);
  if (type == "Unigram") return make_unigram_model(j, where);
  fail(where + ".type", "model type '" + type + "' is not supported (supported: BPE, WordPiece, WordLevel, Unigram)");
}

}  // namespace ordo::tokenizer_detail::hf
