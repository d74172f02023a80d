// Inputs that used to cost quadratic time (issue #31): lstrip and many added tokens, Unigram over
// unknown runs, a Split regex past the PCRE2 JIT stack, big safetensors headers and JSON configs.
// Each runs at a size that took seconds to minutes before and asserts the answer, not the time;
// the added-token matcher is also checked against the straightforward matcher it replaced.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "../models/src/json_config.hpp"
#include "../tokenizer/src/leftmost_longest.hpp"
#include "ordo/safetensors.hpp"
#include "ordo/tensor.hpp"
#include "ordo/tokenizer.hpp"

namespace {

using nlohmann::json;
using ordo::tokenizer_detail::LeftmostLongest;

struct TempDir {
  std::filesystem::path path;
  TempDir() {
    path = std::filesystem::temp_directory_path() /
           ("ordo_linear_" + std::to_string(::getpid()) + "_" + std::to_string(counter()++));
    std::filesystem::create_directories(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  static int& counter() {
    static int n = 0;
    return n;
  }
  std::string write(const std::string& name, const std::string& data) const {
    const std::string p = (path / name).string();
    std::ofstream f(p, std::ios::binary);
    f.write(data.data(), static_cast<std::streamsize>(data.size()));
    return p;
  }
};

json added(int id, const std::string& content, bool lstrip, bool rstrip, bool single_word, bool normalized) {
  return {{"id", id},         {"content", content},       {"single_word", single_word}, {"lstrip", lstrip},
          {"rstrip", rstrip}, {"normalized", normalized}, {"special", !normalized}};
}

// ---- the matcher replaced in added_vocabulary.cpp, kept here as the reference ------------------
// At each byte, try every pattern; keep the longest (the first listed among equals).
struct NaiveMatch {
  size_t begin, end, pattern;
};
bool naive_find(const std::vector<std::string>& patterns, const std::string& s, size_t from, NaiveMatch& m) {
  for (size_t i = from; i < s.size(); ++i) {
    size_t best_len = 0, best = 0;
    for (size_t p = 0; p < patterns.size(); ++p)
      if (patterns[p].size() > best_len && s.compare(i, patterns[p].size(), patterns[p]) == 0)
        best_len = patterns[p].size(), best = p;
    if (best_len) {
      m = {i, i + best_len, best};
      return true;
    }
  }
  return false;
}

std::string random_string(std::mt19937& rng, const std::vector<std::string>& alphabet, size_t min_len, size_t max_len) {
  std::string s;
  const size_t n = std::uniform_int_distribution<size_t>(min_len, max_len)(rng);
  for (size_t i = 0; i < n; ++i) s += alphabet[std::uniform_int_distribution<size_t>(0, alphabet.size() - 1)(rng)];
  return s;
}

TEST(LeftmostLongest, AgreesWithTryingEveryPatternAtEveryByte) {
  std::mt19937 rng(31);
  // Two letters make patterns that are prefixes and suffixes of each other, which is where the
  // failure links and the dead state matter; five (one of them two bytes) make sparser sets.
  const std::vector<std::string> two = {"a", "b"}, five = {"a", "b", "c", " ", "\xc3\xa9"};
  size_t matches = 0;
  for (int round = 0; round < 6000; ++round) {
    const auto& alphabet = round % 2 ? two : five;
    std::vector<std::string> patterns;
    const int n = std::uniform_int_distribution<int>(1, 12)(rng);
    for (int i = 0; i < n; ++i) patterns.push_back(random_string(rng, alphabet, 1, round % 2 ? 7 : 5));
    const LeftmostLongest matcher(patterns);
    const std::string text = random_string(rng, alphabet, 0, 60);
    for (size_t from = 0;;) {
      NaiveMatch want{};
      LeftmostLongest::Match got;
      const bool w = naive_find(patterns, text, from, want);
      ASSERT_EQ(matcher.find(text, from, got), w) << "text '" << text << "' from " << from;
      if (!w) break;
      ++matches;
      ASSERT_EQ(got.begin, want.begin) << text;
      ASSERT_EQ(got.end, want.end) << text;
      ASSERT_EQ(got.pattern, want.pattern) << text;
      from = want.end;
    }
  }
  EXPECT_GT(matches, 30000u);
}

TEST(LeftmostLongest, LongestAtTheLeftmostStartEvenPastAShorterMatch) {
  // Hand-checked: "abcd" fails at 0, so "bc" at 1 wins over "c"; "cde" is longer than "c" at 2.
  const LeftmostLongest m({"abcd", "bc", "c", "cde"});
  LeftmostLongest::Match got;
  ASSERT_TRUE(m.find("abcx", 0, got));
  EXPECT_EQ(got.begin, 1u);
  EXPECT_EQ(got.end, 3u);
  EXPECT_EQ(got.pattern, 1u);
  ASSERT_TRUE(m.find("xcdez", 0, got));
  EXPECT_EQ(got.begin, 1u);
  EXPECT_EQ(got.end, 4u);
  EXPECT_EQ(got.pattern, 3u);
  EXPECT_FALSE(LeftmostLongest(std::vector<std::string>{}).find("abc", 0, got));
  EXPECT_FALSE(LeftmostLongest(std::vector<std::string>{""}).find("abc", 0, got));
}

// ---- tokenizers' find_matches as added_vocabulary.cpp had it, over the naive matcher --------------
struct Tok {
  std::string content;
  int id;
  bool lstrip, rstrip, single_word, normalized;
};
struct Piece {
  size_t begin, end;
  int id;
};
bool is_ws(const std::string& s, size_t at, size_t& next) {  // the test alphabet's whitespace
  if (s.compare(at, 1, " ") == 0 || s.compare(at, 1, "\t") == 0) return next = at + 1, true;
  if (s.compare(at, 3, "\xe3\x80\x80") == 0) return next = at + 3, true;
  return false;
}
bool is_word_at(const std::string& s, size_t at) {  // letters: a, b, c, é
  return at < s.size() && (s[at] == 'a' || s[at] == 'b' || s[at] == 'c' || s[at] == '\xc3');
}
size_t prev_start(const std::string& s, size_t at) {
  size_t i = at - 1;
  while (i > 0 && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) --i;
  return i;
}
std::vector<Piece> reference_split(const std::vector<Tok>& toks, const std::string& s, bool normalized) {
  std::vector<std::string> patterns;
  std::vector<const Tok*> which;
  for (const Tok& t : toks)
    if (t.normalized == normalized) patterns.push_back(t.content), which.push_back(&t);
  std::vector<Piece> out;
  size_t start_offset = 0;
  NaiveMatch m{};
  for (size_t i = 0; i < s.size() && naive_find(patterns, s, i, m);) {
    const Tok& t = *which[m.pattern];
    size_t start = m.begin, stop = m.end;
    i = stop;
    if (t.single_word && ((start > 0 && is_word_at(s, prev_start(s, start))) || is_word_at(s, stop))) continue;
    if (t.lstrip) {  // the whole whitespace run before the match, scanned from the text's start
      size_t run = std::string::npos;
      for (size_t k = 0; k < start;) {
        size_t next = k + 1;
        if (is_ws(s, k, next)) {
          if (run == std::string::npos) run = k;
        } else {
          run = std::string::npos;
          while (next < s.size() && (static_cast<unsigned char>(s[next]) & 0xC0) == 0x80) ++next;
        }
        k = next;
      }
      if (run != std::string::npos) start = std::max(run, start_offset);
    }
    if (t.rstrip) {
      size_t next = 0;
      while (stop < s.size() && is_ws(s, stop, next)) stop = next;
      i = stop;
    }
    if (start_offset < start) out.push_back({start_offset, start, -1});
    out.push_back({start, stop, t.id});
    start_offset = stop;
  }
  if (start_offset < s.size()) out.push_back({start_offset, s.size(), -1});
  return out;
}

// Every character is its own word (Split "." Isolated), so the ids show exactly which bytes went to
// which added token and which stayed text.
TEST(AddedTokensLinear, AgreeWithTheReplacedMatcherOnRandomTokensAndFlags) {
  const std::vector<std::string> alphabet = {"a", "b", "c", " ", "\t", "\xc3\xa9", "\xe3\x80\x80"};
  json base = {{"<unk>", 0}};
  for (size_t i = 0; i < alphabet.size(); ++i) base[alphabet[i]] = static_cast<int>(i + 1);
  std::mt19937 rng(6);
  TempDir d;
  size_t added_seen = 0;
  for (int round = 0; round < 300; ++round) {
    std::vector<Tok> toks;
    json list = json::array(), vocab = base;
    const int n = std::uniform_int_distribution<int>(1, 6)(rng);
    for (int i = 0; i < n; ++i) {
      std::string c = random_string(rng, alphabet, 1, 3);
      bool dup = false;
      for (const Tok& t : toks) dup |= t.content == c;
      if (dup) continue;
      const auto bit = [&] { return std::uniform_int_distribution<int>(0, 1)(rng) == 1; };
      Tok t{c, 100 + i, bit(), bit(), bit(), bit()};
      toks.push_back(t);
      list.push_back(added(t.id, t.content, t.lstrip, t.rstrip, t.single_word, t.normalized));
      vocab[t.content] = t.id;  // added tokens already in the vocabulary keep their id
    }
    const std::string path = d.write(
        "tokenizer.json",
        json{{"model", {{"type", "WordLevel"}, {"vocab", vocab}, {"unk_token", "<unk>"}}},
             {"pre_tokenizer", {{"type", "Split"}, {"pattern", {{"Regex", "(?s)."}}}, {"behavior", "Isolated"}}},
             {"added_tokens", list}}
            .dump());
    auto tok = ordo::load_tokenizer_json(path);
    for (int k = 0; k < 20; ++k) {
      const std::string text = random_string(rng, alphabet, 0, 40);
      std::vector<int32_t> want;
      for (const Piece& raw : reference_split(toks, text, false)) {
        if (raw.id >= 0) {
          want.push_back(raw.id), ++added_seen;
          continue;
        }
        const std::string piece = text.substr(raw.begin, raw.end - raw.begin);
        for (const Piece& sub : reference_split(toks, piece, true)) {
          if (sub.id >= 0) {
            want.push_back(sub.id), ++added_seen;
            continue;
          }
          for (size_t i = sub.begin; i < sub.end;) {
            size_t e = i + 1;
            while (e < sub.end && (static_cast<unsigned char>(piece[e]) & 0xC0) == 0x80) ++e;
            want.push_back(vocab.at(piece.substr(i, e - i)).get<int32_t>());
            i = e;
          }
        }
      }
      ASSERT_EQ(tok->encode(text, false), want) << "text '" << text << "' tokens " << list.dump();
    }
  }
  EXPECT_GT(added_seen, 2000u);
}

// ---- the pathological classes at sizes that took seconds or minutes ------------------------------

TEST(AddedTokensLinear, LstripMaskMatchedTwoHundredThousandTimes) {
  TempDir d;
  const std::string path = d.write(
      "tokenizer.json",
      json{{"model",
            {{"type", "WordLevel"}, {"vocab", {{"a", 0}, {"<unk>", 1}, {"<mask>", 2}}}, {"unk_token", "<unk>"}}},
           {"pre_tokenizer", {{"type", "WhitespaceSplit"}}},
           {"added_tokens", json::array({added(2, "<mask>", true, false, false, false)})}}
          .dump());
  auto tok = ordo::load_tokenizer_json(path);
  std::string text;
  for (int i = 0; i < 200000; ++i) text += "a   <mask> ";
  const std::vector<int32_t> ids = tok->encode(text, false);
  ASSERT_EQ(ids.size(), 400000u);
  for (size_t i = 0; i < ids.size(); ++i) ASSERT_EQ(ids[i], i % 2 ? 2 : 0) << i;
}

TEST(AddedTokensLinear, TwentyThousandAddedTokensOverAMegabyte) {
  json vocab = {{"<unk>", 0}}, list = json::array();
  for (int i = 0; i < 20000; ++i) {
    vocab["tok" + std::to_string(i)] = i + 1;
    list.push_back(added(i + 1, "tok" + std::to_string(i), false, false, false, false));
  }
  TempDir d;
  const std::string path =
      d.write("tokenizer.json", json{{"model", {{"type", "WordLevel"}, {"vocab", vocab}, {"unk_token", "<unk>"}}},
                                     {"pre_tokenizer", {{"type", "WhitespaceSplit"}}},
                                     {"added_tokens", list}}
                                    .dump());
  auto tok = ordo::load_tokenizer_json(path);
  std::string text;
  std::vector<int32_t> want;
  for (int i = 0; text.size() < (1 << 20); ++i) {
    const int k = (i * 7919) % 20000;
    // "tok1234" is matched whole (longest), never as "tok123" followed by "4".
    text += "tok" + std::to_string(k) + " x ";
    want.push_back(k + 1);
    want.push_back(0);
  }
  EXPECT_EQ(tok->encode(text, false), want);
}

TEST(UnigramLinear, FourMegabytesOfUnknownCjkIsOneUnknownToken) {
  TempDir d;
  const std::string path = d.write(
      "tokenizer.json", json{{"model",
                              {{"type", "Unigram"},
                               {"unk_id", 0},
                               {"vocab", json::array({json::array({"<unk>", 0.0}), json::array({"a", -1.0})})}}}}
                            .dump());
  auto tok = ordo::load_tokenizer_json(path);
  std::string text;
  while (text.size() < (4u << 20)) text += "\xe4\xb8\xad\xe6\x96\x87";
  const std::string with_a = text + "a" + text;
  EXPECT_EQ(tok->encode(text, false), std::vector<int32_t>({0}));
  EXPECT_EQ(tok->encode(with_a, false), std::vector<int32_t>({0, 1, 0}));
}

TEST(RegexLinear, SplitPatternOnLongWordsOutgrowsTheJitStack) {
  TempDir d;
  const std::string path =
      d.write("tokenizer.json",
              json{{"model", {{"type", "WordLevel"}, {"vocab", {{"<unk>", 0}, {"-", 1}}}, {"unk_token", "<unk>"}}},
                   {"pre_tokenizer",
                    {{"type", "Split"}, {"pattern", {{"Regex", "(?:\\p{L}|\\p{N})+"}}}, {"behavior", "Isolated"}}}}
                  .dump());
  auto tok = ordo::load_tokenizer_json(path);
  // About 32 bytes of JIT stack per letter: 3,000 letters overflow PCRE2's default 32 KB, and
  // 3,000 / 100,000 / 2,000,000 need each of the grown stacks (1, 16, 256 MB).
  for (size_t n : {size_t{3000}, size_t{100000}, size_t{2000000}}) {
    const std::string word(n, 'a');
    EXPECT_EQ(tok->encode(word + "-" + word, false), std::vector<int32_t>({0, 1, 0})) << n;
  }
}

TEST(JsonLinear, SafetensorsHeaderWithAHundredThousandTensors) {
  const size_t n = 100000;
  std::string header = "{\"__metadata__\":{\"format\":\"pt\"}";
  for (size_t i = 0; i < n; ++i)
    header += ",\"t" + std::to_string(i) + "\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[" +
              std::to_string(4 * i) + "," + std::to_string(4 * i + 4) + "]}";
  header += "}";
  std::string file(8, '\0');
  const uint64_t len = header.size();
  std::memcpy(&file[0], &len, 8);
  file += header;
  for (size_t i = 0; i < n; ++i) {
    const float v = static_cast<float>(i);
    file.append(reinterpret_cast<const char*>(&v), 4);
  }
  TempDir d;
  const auto st = ordo::SafeTensors::open(d.write("model.safetensors", file));
  ASSERT_EQ(st.size(), n);
  EXPECT_EQ(st.get("t99999").to_f32().f32()[0], 99999.0f);
  EXPECT_EQ(st.metadata().at("format"), "pt");
}

TEST(JsonLinear, SafetensorsDuplicateKeyAmongManyIsStillReported) {
  std::string header = "{";
  for (size_t i = 0; i < 50000; ++i)
    header += "\"t" + std::to_string(i) + "\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},";
  header += "\"t123\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}";
  std::string file(8, '\0');
  const uint64_t len = header.size();
  std::memcpy(&file[0], &len, 8);
  file += header + std::string(4, '\0');
  TempDir d;
  const std::string path = d.write("dup.safetensors", file);
  try {
    ordo::SafeTensors::open(path);
    FAIL() << "a duplicate tensor name was accepted";
  } catch (const ordo::Error& e) {
    EXPECT_NE(std::string(e.what()).find("'t123'"), std::string::npos) << e.what();
  }
}

TEST(JsonLinear, ConfigWithTwoHundredThousandNestedObjects) {
  std::string text = "{\"hidden_size\": 64";
  for (int i = 0; i < 200000; ++i)
    text += ",\"k" + std::to_string(i) + "\":{\"a\":{\"b\":[" + std::to_string(i) + "]}}";
  text += "}";
  const ordo::JsonConfig c = ordo::JsonConfig::parse(text, "config.json");
  EXPECT_EQ(c.get_int("hidden_size"), 64);
  EXPECT_EQ(c.raw().size(), 200001u);
  EXPECT_EQ(c.raw()["k199999"]["a"]["b"][0], 199999);
}

TEST(JsonLinear, KeyCallbackSeesDepthsAndErrorsKeepTheirShape) {
  std::vector<std::pair<int, std::string>> keys;
  const std::string doc = R"({"a": {"b": [{"c": 1}]}, "d": 2})";
  const json j = ordo::parse_json_document(doc.data(), doc.size(), "x.json", "malformed JSON",
                                           [&](int depth, const std::string& k) { keys.emplace_back(depth, k); });
  EXPECT_EQ(j["a"]["b"][0]["c"], 1);
  const std::vector<std::pair<int, std::string>> want = {{1, "a"}, {2, "b"}, {4, "c"}, {1, "d"}};
  EXPECT_EQ(keys, want);
  const std::string bad = "{\"a\": 1,\n \"b\": }";
  try {
    ordo::parse_json_document(bad.data(), bad.size(), "x.json", "malformed JSON");
    FAIL();
  } catch (const ordo::Error& e) {
    EXPECT_NE(std::string(e.what()).find("x.json: malformed JSON at line 2, column 7"), std::string::npos) << e.what();
  }
  const std::string big = R"({"rope": {"factor": 1e400}})";
  try {
    ordo::parse_json_document(big.data(), big.size(), "x.json", "malformed JSON");
    FAIL();
  } catch (const ordo::Error& e) {
    EXPECT_NE(std::string(e.what()).find("x.json: field 'factor': number overflow"), std::string::npos) << e.what();
  }
}

}  // namespace
