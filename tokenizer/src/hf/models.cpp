// tokenizer.json "model": dispatch by type (inferred, as tokenizers does, when a file names none), and
// the vocabulary / merges readers the models share.
#include <cctype>
#include <climits>
#include <cstdint>

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
  // merges.txt, as the slow GPT2Tokenizer reads it (Python str.split(): any whitespace run separates).
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

namespace {
// A tokenizer.json merge string, as tokenizers' convert_merges_to_hashmap splits it: at ' ' only,
// into exactly two parts, so a token may hold any other whitespace (Phi-3's ";\r"). Empty if it is
// not one merge.
std::optional<std::pair<std::string, std::string>> split_json_merge(const std::string& line) {
  const size_t sp = line.find(' ');
  if (sp == std::string::npos || line.find(' ', sp + 1) != std::string::npos) return std::nullopt;
  return std::make_pair(line.substr(0, sp), line.substr(sp + 1));
}

bool is_version_line(const json& m) {
  return m.is_string() && m.get_ref<const std::string&>().rfind("#version", 0) == 0;
}
}  // namespace

std::vector<std::pair<std::string, std::string>> read_merges(const json& j, const std::string& where) {
  if (!j.is_array()) fail(where, "must be a list");
  // All [a, b] pairs (tokenizers >= 0.20) or all "a b" strings, "#version" lines skipped.
  const bool pairs = !j.empty() && j[0].is_array();
  std::vector<std::pair<std::string, std::string>> out;
  out.reserve(j.size());
  for (size_t i = 0; i < j.size(); ++i) {
    const json& m = j[i];
    const std::string at = where + "[" + std::to_string(i) + "]";
    if (pairs) {
      if (!m.is_array() || m.size() != 2 || !m[0].is_string() || !m[1].is_string())
        fail(at, "must be a pair [a, b] of strings, as the first merge is");
      out.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
      continue;
    }
    if (!m.is_string()) fail(at, "must be a string \"a b\", as the first merge is");
    if (is_version_line(m)) continue;
    auto ab = split_json_merge(m.get_ref<const std::string&>());
    if (!ab) fail(at, "malformed merge " + json(m).dump() + ": a merge string is two tokens joined by one space");
    out.push_back(std::move(*ab));
  }
  return out;
}

namespace {

// ---- "model" without "type": which kind tokenizers would read it as -----------------------------
// tokenizers' ModelWrapper deserializer tries BPE, WordPiece, WordLevel, Unigram in this order
// (ModelUntagged) and takes the first whose deserializer accepts the fields. Each check below says
// why that deserializer would refuse the object, or returns "" if it accepts it.

bool is_u32(const json& v) {
  return v.is_number_unsigned() ? v.get<uint64_t>() <= UINT32_MAX
                                : v.is_number_integer() && v.get<int64_t>() >= 0 && v.get<int64_t>() <= UINT32_MAX;
}

// kind: 's' string, 'b' bool, 'u' u32, 'n' number. required: the key must be there and not null.
std::string field_problem(const json& j, const char* key, char kind, bool required) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return required ? std::string("no '") + key + "'" : "";
  const bool ok = kind == 's'   ? it->is_string()
                  : kind == 'b' ? it->is_boolean()
                  : kind == 'u' ? is_u32(*it)
                                : it->is_number();
  if (ok) return "";
  const char* what = kind == 's'   ? "a string"
                     : kind == 'b' ? "a boolean"
                     : kind == 'u' ? "a non-negative integer"
                                   : "a number";
  return std::string("'") + key + "' is not " + what;
}

std::string vocab_map_problem(const json& j) {
  auto it = j.find("vocab");
  if (it == j.end() || it->is_null()) return "no 'vocab'";
  if (!it->is_object()) return "'vocab' is not a {token: id} object";
  for (const auto& [tok, id] : it->items())
    if (!is_u32(id)) return "'vocab' gives '" + tok + "' a non-integer or negative id";
  return "";
}

std::string first_problem(std::initializer_list<std::string> problems) {
  for (const auto& p : problems)
    if (!p.empty()) return p;
  return "";
}

std::string bpe_problem(const json& j) {
  std::string p = first_problem(
      {vocab_map_problem(j), field_problem(j, "dropout", 'n', false), field_problem(j, "unk_token", 's', false),
       field_problem(j, "continuing_subword_prefix", 's', false), field_problem(j, "end_of_word_suffix", 's', false),
       field_problem(j, "fuse_unk", 'b', false), field_problem(j, "byte_fallback", 'b', false),
       field_problem(j, "ignore_merges", 'b', false)});
  if (!p.empty()) return p;
  auto mit = j.find("merges");
  if (mit == j.end() || mit->is_null()) return "no 'merges'";
  if (!mit->is_array()) return "'merges' is not a list";
  if (j.contains("dropout") && j["dropout"].is_number() &&
      !(j["dropout"].get<double>() >= 0 && j["dropout"].get<double>() <= 1))
    return "'dropout' is outside [0, 1]";
  const json& vocab = j["vocab"];
  const size_t prefix = j.contains("continuing_subword_prefix") && j["continuing_subword_prefix"].is_string()
                            ? j["continuing_subword_prefix"].get_ref<const std::string&>().size()
                            : 0;
  const bool pairs = !mit->empty() && (*mit)[0].is_array();
  for (const json& m : *mit) {
    std::optional<std::pair<std::string, std::string>> ab;
    if (pairs && m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string())
      ab = std::make_pair(m[0].get<std::string>(), m[1].get<std::string>());
    else if (!pairs && m.is_string() && is_version_line(m))
      continue;
    else if (!pairs && m.is_string())
      ab = split_json_merge(m.get_ref<const std::string&>());
    if (!ab) return "'merges' is not all \"a b\" strings or all [a, b] pairs";
    const auto& [a, b] = *ab;
    if (b.size() < prefix || !vocab.contains(a) || !vocab.contains(b) || !vocab.contains(a + b.substr(prefix)))
      return "merge " + json(a + " " + b).dump() + " uses or makes a token outside 'vocab'";
  }
  return "";
}

std::string wordpiece_problem(const json& j) {
  return first_problem({vocab_map_problem(j), field_problem(j, "unk_token", 's', true),
                        field_problem(j, "continuing_subword_prefix", 's', true),
                        field_problem(j, "max_input_chars_per_word", 'u', true)});
}

std::string wordlevel_problem(const json& j) {
  return first_problem({vocab_map_problem(j), field_problem(j, "unk_token", 's', true)});
}

std::string unigram_problem(const json& j) {
  auto it = j.find("vocab");
  if (it == j.end() || it->is_null()) return "no 'vocab'";
  if (!it->is_array()) return "'vocab' is not a list of [piece, score]";
  for (const json& e : *it)
    if (!e.is_array() || e.size() != 2 || !e[0].is_string() || !e[1].is_number())
      return "'vocab' is not a list of [piece, score]";
  std::string p = first_problem({field_problem(j, "unk_id", 'u', false)});
  if (!p.empty()) return p;
  if (j.contains("byte_fallback") && !j["byte_fallback"].is_boolean()) return "'byte_fallback' is not a boolean";
  if (j.contains("unk_id") && !j["unk_id"].is_null() && j["unk_id"].get<uint64_t>() >= it->size())
    return "'unk_id' is outside 'vocab'";
  return "";
}

std::string infer_model_type(const json& j, const std::string& where) {
  std::string why;
  for (const auto& [kind, problem] : {std::pair{"BPE", bpe_problem(j)},
                                      {"WordPiece", wordpiece_problem(j)},
                                      {"WordLevel", wordlevel_problem(j)},
                                      {"Unigram", unigram_problem(j)}}) {
    if (problem.empty()) return kind;
    why += std::string(why.empty() ? "" : "; ") + kind + ": " + problem;
  }
  fail(where, "has no 'type', and its fields fit none of the kinds tokenizers tries in turn (" + why + ")");
}

}  // namespace

namespace {
std::optional<std::string> opt_string(const json& j, const char* key, const std::string& where) {
  if (!j.contains(key) || j[key].is_null()) return std::nullopt;
  return get_string(j, key, where);
}
}  // namespace

std::unique_ptr<Model> make_model(const json& j, const std::string& where) {
  if (!j.is_object()) fail(where, "must be a JSON object");
  // Files written before "type" existed (tokenizers < 0.9, e.g. t5-small's) name no kind.
  const std::string type = j.contains("type") ? type_of(j, where) : infer_model_type(j, where);
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
