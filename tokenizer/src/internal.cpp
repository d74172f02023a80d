#include "internal.hpp"

#include <algorithm>
#include <climits>
#include <limits>
#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include "ordo/input.hpp"

namespace ordo::tokenizer_detail {

std::string read_file(const std::string& path) {
  try {
    return read_input_file(path, kMaxTokenizerFileBytes, "a tokenizer file");
  } catch (const Error& e) {
    throw Error(std::string("tokenizer: ") + e.what());
  }
}

nlohmann::json read_json_file(const std::string& path) {
  const std::string text = read_file(path);
  check_json_limits(text, "tokenizer: " + path);
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error("tokenizer: " + path + " is not valid JSON: " + e.what());
  }
}

bool file_exists(const std::string& path) {
  struct stat st {};
  // Anything but a directory counts: read_file() then refuses a FIFO or device with an Error
  // instead of the file being skipped in silence.
  return ::stat(path.c_str(), &st) == 0 && !S_ISDIR(st.st_mode);
}

std::string join_path(const std::string& dir, const std::string& name) {
  if (dir.empty()) return name;
  if (dir.back() == '/') return dir + name;
  return dir + "/" + name;
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

namespace {
// Number of bytes of a well-formed sequence starting at s[i], or the length of the maximal
// ill-formed subpart (negated, at least 1) when the sequence is ill-formed.
int utf8_seq(const std::string& s, size_t i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) return 1;
  int need;
  unsigned char lo = 0x80, hi = 0xBF;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 1;
  } else if (b0 == 0xE0) {
    need = 2, lo = 0xA0;
  } else if ((b0 >= 0xE1 && b0 <= 0xEC) || b0 == 0xEE || b0 == 0xEF) {
    need = 2;
  } else if (b0 == 0xED) {
    need = 2, hi = 0x9F;
  } else if (b0 == 0xF0) {
    need = 3, lo = 0x90;
  } else if (b0 >= 0xF1 && b0 <= 0xF3) {
    need = 3;
  } else if (b0 == 0xF4) {
    need = 3, hi = 0x8F;
  } else {
    return -1;
  }
  for (int k = 1; k <= need; ++k) {
    if (i + k >= s.size()) return -k;
    const auto b = static_cast<unsigned char>(s[i + k]);
    if (b < lo || b > hi) return -k;
    lo = 0x80, hi = 0xBF;
  }
  return need + 1;
}
}  // namespace

char32_t next_cp(const std::string& s, size_t& i) {
  const int n = utf8_seq(s, i);
  if (n < 0) {  // ill-formed (or cut off by the end of s): one U+FFFD for the maximal subpart
    i += static_cast<size_t>(-n);
    return 0xFFFD;
  }
  const auto b0 = static_cast<unsigned char>(s[i]);
  auto cont = [&](int k) { return static_cast<char32_t>(static_cast<unsigned char>(s[i + k]) & 0x3F); };
  char32_t cp;
  switch (n) {
    case 1: cp = b0; break;
    case 2: cp = ((b0 & 0x1F) << 6) | cont(1); break;
    case 3: cp = ((b0 & 0x0F) << 12) | (cont(1) << 6) | cont(2); break;
    default: cp = ((b0 & 0x07) << 18) | (cont(1) << 12) | (cont(2) << 6) | cont(3); break;
  }
  i += static_cast<size_t>(n);
  return cp;
}

std::string utf8_lossy(const std::string& bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (size_t i = 0; i < bytes.size();) {
    const int n = utf8_seq(bytes, i);
    if (n > 0) {
      out.append(bytes, i, static_cast<size_t>(n));
      i += static_cast<size_t>(n);
    } else {
      out += "\xEF\xBF\xBD";
      i += static_cast<size_t>(-n);
    }
  }
  return out;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.size() >= prefix.size() && s.compare(0, prefix.size(), prefix) == 0;
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  if (from.empty()) return s;
  size_t pos = s.find(from);
  if (pos == std::string::npos) return s;
  std::string out;
  out.reserve(s.size());
  size_t last = 0;
  for (; pos != std::string::npos; pos = s.find(from, last)) {
    out.append(s, last, pos - last);
    out += to;
    last = pos + from.size();
  }
  out.append(s, last, std::string::npos);
  return out;
}

bool py_isspace(char32_t c) {
  switch (c) {
    case 0x09: case 0x0A: case 0x0B: case 0x0C: case 0x0D: case 0x1C: case 0x1D: case 0x1E:
    case 0x1F: case 0x20: case 0x85: case 0xA0: case 0x1680: case 0x2028: case 0x2029:
    case 0x202F: case 0x205F: case 0x3000:
      return true;
    default:
      return c >= 0x2000 && c <= 0x200A;
  }
}

namespace {
// Byte length of the whitespace run at the start (forward) of s.
size_t leading_space_bytes(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    size_t j = i;
    if (!py_isspace(next_cp(s, j))) break;
    i = j;
  }
  return i;
}
size_t trailing_space_start(const std::string& s) {
  size_t end = 0;  // byte index just after the last non-space code point
  for (size_t i = 0; i < s.size();) {
    const char32_t c = next_cp(s, i);
    if (!py_isspace(c)) end = i;
  }
  return end;
}
}  // namespace

std::string py_lstrip(const std::string& s) { return s.substr(leading_space_bytes(s)); }
std::string py_rstrip(const std::string& s) { return s.substr(0, trailing_space_start(s)); }
std::string py_strip(const std::string& s) { return py_lstrip(py_rstrip(s)); }

// ---- AddedTokens -------------------------------------------------------------------------------

void AddedTokens::add(const AddedToken& t) {
  if (t.content.empty()) return;
  auto it = by_content_.find(t.content);
  if (it != by_content_.end()) {
    by_id_.erase(tokens_[it->second].id);
    tokens_[it->second] = t;
    by_id_[t.id] = it->second;
  } else {
    by_content_[t.content] = tokens_.size();
    by_id_[t.id] = tokens_.size();
    tokens_.push_back(t);
  }
  std::lock_guard<std::mutex> lock(cache_.mu);
  cache_.matcher.reset();
}

const AddedToken* AddedTokens::find(const std::string& content) const {
  auto it = by_content_.find(content);
  return it == by_content_.end() ? nullptr : &tokens_[it->second];
}

const AddedToken* AddedTokens::by_id(int32_t id) const {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &tokens_[it->second];
}

std::vector<AddedTokens::Chunk> AddedTokens::split(const std::string& text) const {
  std::vector<std::string> parts;
  if (tokens_.empty()) {
    parts.push_back(text);
  } else {
    std::shared_ptr<const LeftmostLongest> matcher;
    {
      std::lock_guard<std::mutex> lock(cache_.mu);
      if (!cache_.matcher) {
        std::vector<std::string> contents;
        contents.reserve(tokens_.size());
        for (const auto& t : tokens_) contents.push_back(t.content);
        cache_.matcher = std::make_shared<const LeftmostLongest>(contents);
      }
      matcher = cache_.matcher;
    }
    size_t start = 0;
    LeftmostLongest::Match m;
    while (start < text.size() && matcher->find(text, start, m)) {
      if (m.begin > start) parts.push_back(text.substr(start, m.begin - start));
      parts.push_back(text.substr(m.begin, m.end - m.begin));
      start = m.end;
    }
    if (start < text.size()) parts.push_back(text.substr(start));
  }
  // PreTrainedTokenizer.tokenize: strip around added tokens, as their flags ask.
  for (size_t i = 0; i < parts.size(); ++i) {
    const AddedToken* t = find(parts[i]);
    if (!t) continue;
    const std::optional<std::string> left = i > 0 ? std::optional<std::string>(parts[i - 1]) : std::nullopt;
    const std::optional<std::string> right =
        i + 1 < parts.size() ? std::optional<std::string>(parts[i + 1]) : std::nullopt;
    if (t->rstrip && right && !right->empty()) parts[i + 1] = py_lstrip(*right);
    if (t->lstrip && left && !left->empty()) parts[i - 1] = py_rstrip(*left);
    if (t->single_word && left && !left->empty() && left->back() != ' ') {
      parts[i - 1] += parts[i];
      parts[i].clear();
    } else if (t->single_word && right && !right->empty() && right->front() != ' ') {
      parts[i] += *right;
      parts[i + 1].clear();
    }
  }
  std::vector<Chunk> out;
  for (auto& p : parts) {
    if (p.empty()) continue;
    const bool added = find(p) != nullptr;
    out.push_back({std::move(p), added});
  }
  return out;
}

// ---- directory configuration -------------------------------------------------------------------

namespace {
using nlohmann::json;

std::optional<bool> opt_bool(const json& j, const char* key, const std::string& file) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (!it->is_boolean()) throw Error("tokenizer: " + file + ": field '" + key + "' must be a boolean");
  return it->get<bool>();
}

std::optional<std::string> opt_token(const json& j, const char* key, const std::string& file) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("content") && (*it)["content"].is_string())
    return (*it)["content"].get<std::string>();
  throw Error("tokenizer: " + file + ": field '" + key + "' must be a string or an AddedToken object");
}

std::optional<int32_t> opt_id(const json& j, const char* key, const std::string& file) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  const std::string where = file + ": field '" + key + "'";
  if (it->is_number_integer()) return json_token_id(*it, where, true);
  if (it->is_array()) {
    if (it->empty()) return std::nullopt;
    if ((*it)[0].is_number_integer()) return json_token_id((*it)[0], where, true);
  }
  throw Error("tokenizer: " + where + " must be an integer or a list of integers");
}
}  // namespace

DirConfig read_dir_config(const std::string& dir) {
  DirConfig c;
  const std::string tc = join_path(dir, "tokenizer_config.json");
  if (file_exists(tc)) {
    const json j = read_json_file(tc);
    if (!j.is_object()) throw Error("tokenizer: " + tc + " must hold a JSON object");
    c.legacy = opt_bool(j, "legacy", tc);
    c.do_lower_case = opt_bool(j, "do_lower_case", tc);
    c.add_bos = opt_bool(j, "add_bos_token", tc);
    c.add_eos = opt_bool(j, "add_eos_token", tc);
    c.add_prefix_space = opt_bool(j, "add_prefix_space", tc);
    c.strip_accents = opt_bool(j, "strip_accents", tc);
    c.tokenize_chinese_chars = opt_bool(j, "tokenize_chinese_chars", tc);
    if (auto it = j.find("extra_ids"); it != j.end() && !it->is_null()) {
      if (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<int64_t>() > kMaxIdGap)
        throw Error("tokenizer: " + tc + ": field 'extra_ids' must be an integer in [0, " +
                    std::to_string(kMaxIdGap) + "]");
      c.extra_ids = it->get<int>();
    }
    if (auto it = j.find("tokenizer_class"); it != j.end() && it->is_string())
      c.tokenizer_class = it->get<std::string>();
    c.bos_token = opt_token(j, "bos_token", tc);
    c.eos_token = opt_token(j, "eos_token", tc);
    c.unk_token = opt_token(j, "unk_token", tc);
    c.pad_token = opt_token(j, "pad_token", tc);
    c.cls_token = opt_token(j, "cls_token", tc);
    c.sep_token = opt_token(j, "sep_token", tc);
    c.mask_token = opt_token(j, "mask_token", tc);
    if (auto it = j.find("added_tokens_decoder"); it != j.end() && it->is_object()) {
      for (const auto& [key, v] : it->items()) {
        AddedToken t;
        t.id = parse_token_id(key, tc + ": added_tokens_decoder key '" + key + "'");
        if (!v.is_object() || !v.contains("content") || !v["content"].is_string())
          throw Error("tokenizer: " + tc + ": added_tokens_decoder['" + key + "'] has no string 'content'");
        t.content = v["content"].get<std::string>();
        t.special = v.value("special", false);
        t.lstrip = v.value("lstrip", false);
        t.rstrip = v.value("rstrip", false);
        t.single_word = v.value("single_word", false);
        c.added_tokens.push_back(t);
      }
    }
  }
  for (const char* name : {"config.json", "generation_config.json"}) {
    const std::string path = join_path(dir, name);
    if (!file_exists(path)) continue;
    const json j = read_json_file(path);
    if (!j.is_object()) throw Error("tokenizer: " + path + " must hold a JSON object");
    if (auto it = j.find("model_type"); it != j.end() && it->is_string()) c.model_type = it->get<std::string>();
    if (auto v = opt_id(j, "bos_token_id", path)) c.bos_id = v;
    if (auto v = opt_id(j, "eos_token_id", path)) c.eos_id = v;
    if (auto v = opt_id(j, "pad_token_id", path)) c.pad_id = v;
  }
  return c;
}

int32_t json_token_id(const nlohmann::json& v, const std::string& where, bool allow_negative) {
  const bool fits = v.is_number_unsigned() ? v.get<uint64_t>() <= static_cast<uint64_t>(INT32_MAX)
                                           : v.is_number_integer() && v.get<int64_t>() >= INT32_MIN &&
                                                 v.get<int64_t>() <= INT32_MAX;
  if (!fits || (!allow_negative && v.get<int64_t>() < 0))
    throw Error("tokenizer: " + where + " must be " + (allow_negative ? "an integer" : "a non-negative integer") +
                " below 2^31, got " + v.dump());
  return static_cast<int32_t>(v.get<int64_t>());
}

int32_t parse_token_id(const std::string& text, const std::string& where) {
  int64_t v = 0;
  bool ok = !text.empty() && text.size() <= 10;
  for (char ch : text) {
    ok = ok && ch >= '0' && ch <= '9';
    if (ok) v = v * 10 + (ch - '0');
  }
  if (!ok || v > INT32_MAX) throw Error("tokenizer: " + where + " is not a token id (a non-negative integer below 2^31)");
  return static_cast<int32_t>(v);
}

void check_id_limit(int64_t id, size_t listed, const std::string& where) {
  const int64_t limit = static_cast<int64_t>(listed) + kMaxIdGap;
  if (id < 0 || id >= limit)
    throw Error(where + ": token id " + std::to_string(id) + " is out of range: with " +
                std::to_string(listed) + " tokens listed, ids must be below " + std::to_string(limit) +
                " (the listed count + " + std::to_string(kMaxIdGap) + ")");
}

void check_emitted_id(int32_t id, bool known, const std::string& where) {
  if (!known)
    throw Error(where + " is token id " + std::to_string(id) +
                ", which is not in the vocabulary (decode would reject it)");
}

void throw_bad_id(const char* kind, int32_t id, int32_t vocab) {
  throw Error(std::string(kind) + " tokenizer: token id " + std::to_string(id) + " is out of range (vocabulary size " +
              std::to_string(vocab) + ")");
}

}  // namespace ordo::tokenizer_detail
