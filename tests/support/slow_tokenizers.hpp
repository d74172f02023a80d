// The Hugging Face slow-tokenizer goldens (tests/data/fixtures/tokenizers) and stories260K's, the
// tokenizers they describe (loaded once), and a temporary directory, for the tokenizer tests.
#pragma once

#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "ordo/tokenizer.hpp"

namespace ordo::test::slow_tokenizers {

using nlohmann::json;

inline const std::string kData = ORDO_TEST_DATA;
inline const std::string kTokDir = kData + "/fixtures/tokenizers";
inline const std::string kStories = std::string(ORDO_SOURCE_DIR) + "/models/stories260K";

inline const json& load_json(const std::string& path) {
  static std::map<std::string, json> cache;
  auto it = cache.find(path);
  if (it == cache.end()) {
    std::ifstream f(path);
    if (!f) throw std::runtime_error("cannot open " + path);
    it = cache.emplace(path, json::parse(f)).first;
  }
  return it->second;
}

inline const json& tok_golden() { return load_json(kTokDir + "/golden.json"); }
inline const json& stories_golden() { return load_json(kData + "/fixtures/stories260K/golden.json"); }

inline const json& golden_entry(const std::string& name) {
  for (const auto& t : tok_golden()["tokenizers"])
    if (t["name"] == name) return t;
  throw std::runtime_error("no golden tokenizer " + name);
}

// Builds the tokenizer a golden entry describes (hf_class + init_kwargs + files).
inline const ordo::Tokenizer& golden_tokenizer(const std::string& name) {
  static std::map<std::string, std::unique_ptr<ordo::Tokenizer>> cache;
  auto it = cache.find(name);
  if (it != cache.end()) return *it->second;
  const json& e = golden_entry(name);
  const std::string cls = e["hf_class"];
  const json& kw = e["init_kwargs"];
  const auto file = [&](size_t i) { return kTokDir + "/" + e["files"][i].get<std::string>(); };
  ordo::TokenizerOptions o;
  std::unique_ptr<ordo::Tokenizer> tok;
  if (cls == "LlamaTokenizer" || cls == "T5Tokenizer") {
    if (kw.contains("legacy")) o.legacy = kw["legacy"].get<bool>();
    if (cls == "T5Tokenizer") {
      o.sp_style = "t5";
      o.extra_ids = kw.value("extra_ids", 100);
    }
    tok = ordo::load_sentencepiece(file(0), o);
  } else if (cls == "GPT2Tokenizer") {
    tok = ordo::load_bpe(file(0), file(1), o);
  } else if (cls == "BertTokenizer") {
    if (kw.contains("do_lower_case")) o.do_lower_case = kw["do_lower_case"].get<bool>();
    tok = ordo::load_wordpiece(file(0), o);
  } else {
    throw std::runtime_error("unknown hf_class " + cls);
  }
  return *cache.emplace(name, std::move(tok)).first->second;
}

inline std::string sanitize(std::string s) {
  for (auto& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

inline bool valid_utf8(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    size_t n = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    if (n == 2 && b < 0xC2) return false;
    for (size_t k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    i += n;
  }
  return true;
}

// A fresh temporary directory, removed at scope exit.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    std::random_device rd;
    path = std::filesystem::temp_directory_path() / ("ordo_tok_test_" + std::to_string(rd()) + std::to_string(rd()));
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  void copy(const std::string& from, const std::string& name) const { std::filesystem::copy_file(from, path / name); }
  void write(const std::string& name, const std::string& text) const { std::ofstream(path / name) << text; }
  std::string str() const { return path.string(); }
};

// tokenizer.json (HF tokenizers format) built from GPT-2's vocab.json + merges.txt.
inline std::string gpt2_tokenizer_json() {
  json vocab = load_json(kTokDir + "/gpt2/vocab.json");
  std::ifstream mf(kTokDir + "/gpt2/merges.txt");
  std::string line;
  json merges = json::array();
  bool first = true;
  while (std::getline(mf, line)) {
    if (first && line.rfind("#version", 0) == 0) {
      first = false;
      continue;
    }
    first = false;
    if (line.empty()) continue;
    const auto sp = line.find(' ');
    merges.push_back(json::array({line.substr(0, sp), line.substr(sp + 1)}));  // newer [a, b] form
  }
  json j = {
      {"version", "1.0"},
      {"added_tokens", json::array({{{"id", 50256},
                                     {"content", "<|endoftext|>"},
                                     {"single_word", false},
                                     {"lstrip", false},
                                     {"rstrip", false},
                                     {"normalized", true},
                                     {"special", true}}})},
      {"normalizer", nullptr},
      {"pre_tokenizer",
       {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}}},
      {"post_processor",
       {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", false}, {"use_regex", true}}},
      {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}}},
      {"model",
       {{"type", "BPE"},
        {"dropout", nullptr},
        {"unk_token", nullptr},
        {"continuing_subword_prefix", ""},
        {"end_of_word_suffix", ""},
        {"fuse_unk", false},
        {"byte_fallback", false},
        {"vocab", vocab},
        {"merges", merges}}}};
  return j.dump();
}

}  // namespace ordo::test::slow_tokenizers
