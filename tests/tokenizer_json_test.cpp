// tokenizer.json pipelines and Marian against vectors from Hugging Face's own code
// (tests/data/tokenizers/golden.json, written by tools/tokenizers/make_vectors.js: the Rust
// `tokenizers` library for tokenizer.json; MarianTokenizer's rules over SentencePiece's tools for
// opus-mt), plus the errors a bad tokenizer.json gets.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <random>

#include <nlohmann/json.hpp>

#include "ordo/tensor.hpp"
#include "ordo/tokenizer.hpp"
#include "support/hf_tokenizers.hpp"
#include "support/stream.hpp"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace ordo::test::hf_tokenizers;

namespace {

std::string hex_bytes(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) out += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  return out;
}

struct Param {
  std::string name;
  size_t index;
};

std::vector<Param> params() {
  std::vector<Param> out;
  for (const auto& t : golden()["tokenizers"])
    for (size_t i = 0; i < t["cases"].size(); ++i) out.push_back({t["name"].get<std::string>(), i});
  return out;
}

class HfTokenizerGolden : public ::testing::TestWithParam<Param> {};

TEST_P(HfTokenizerGolden, MatchesHuggingFace) {
  const auto& [name, index] = GetParam();
  const json& c = entry(name)["cases"][index];
  const std::string text = c.contains("hex") ? hex_bytes(c["hex"]) : c["text"].get<std::string>();
  SCOPED_TRACE(name + ": " + c.dump());
  const ordo::Tokenizer& tok = tokenizer(name);
  const auto ids = c["ids"].get<std::vector<int32_t>>(), with = c["ids_with_special"].get<std::vector<int32_t>>();
  EXPECT_EQ(tok.encode(text, false), ids);
  EXPECT_EQ(tok.encode(text, true), with);
  EXPECT_EQ(tok.tokenize(text), c["tokens"].get<std::vector<std::string>>());
  EXPECT_EQ(tok.decode(ids), c["decoded"].get<std::string>());
  EXPECT_EQ(tok.decode(with), c["decoded_with_special"].get<std::string>());
  if (c.contains("decoded_skip_special")) {
    EXPECT_EQ(tok.decode(with, true), c["decoded_skip_special"].get<std::string>());
  }
}

std::string param_name(const ::testing::TestParamInfo<Param>& p) {
  std::string s = p.param.name + "_" + std::to_string(p.param.index);
  for (auto& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

INSTANTIATE_TEST_SUITE_P(AllStrings, HfTokenizerGolden, ::testing::ValuesIn(params()), param_name);

TEST(HfTokenizerGoldenCoverage, EveryModelTypeWithAtLeast40Strings) {
  std::map<std::string, size_t> kinds;
  for (const auto& t : golden()["tokenizers"]) {
    EXPECT_GE(t["cases"].size(), 40u) << t["name"];
    kinds[tokenizer(t["name"]).kind()]++;
  }
  for (const char* k : {"bpe", "wordpiece", "unigram", "wordlevel", "marian"}) EXPECT_GE(kinds[k], 1u) << k;
}

TEST(LoadTokenizerJson, DirectoryWithOnlyTokenizerJsonLoadsItsModelType) {
  auto bert = ordo::load_tokenizer(kDir + "/bert-base-uncased");
  EXPECT_STREQ(bert->kind(), "wordpiece");
  EXPECT_EQ(bert->vocab_size(), 30522);
  EXPECT_EQ(bert->unk_id(), 100);
  const json& c = entry("bert-base-uncased")["cases"][1];
  EXPECT_EQ(bert->encode(c["text"]), c["ids_with_special"].get<std::vector<int32_t>>());
  EXPECT_STREQ(ordo::load_tokenizer(kDir + "/unigram")->kind(), "unigram");
  EXPECT_STREQ(ordo::load_tokenizer(kDir + "/wordlevel")->kind(), "wordlevel");
  auto marian = ordo::load_tokenizer(kDir + "/opus-mt-en-mg");
  EXPECT_STREQ(marian->kind(), "marian");
  EXPECT_EQ(marian->eos_id(), 0);
  EXPECT_EQ(marian->pad_id(), 54687);
  EXPECT_EQ(marian->unk_id(), 1);
  EXPECT_EQ(marian->vocab_size(), 54688);
}

TEST(LoadTokenizerJson, OutOfRangeIdsAreErrorsNamingTheId) {
  for (const auto& t : golden()["tokenizers"]) {
    const ordo::Tokenizer& tok = tokenizer(t["name"]);
    for (int32_t bad : {tok.vocab_size(), tok.vocab_size() + 777, -3}) {
      try {
        tok.decode({0, bad});
        ADD_FAILURE() << t["name"] << ": expected ordo::Error for id " << bad;
      } catch (const ordo::Error& e) {
        EXPECT_NE(std::string(e.what()).find(std::to_string(bad)), std::string::npos) << e.what();
      }
      EXPECT_THROW(tok.id_to_piece(bad), ordo::Error);
    }
  }
}

// One tokenizer.json per broken component; the error must name the component (and the file).
TEST(LoadTokenizerJson, UnsupportedOrBrokenComponentsAreErrorsNamingThem) {
  const std::string wl = R"("model": {"type": "WordLevel", "vocab": {"a": 0, "<unk>": 1}, "unk_token": "<unk>"})";
  struct Case {
    std::string file;
    std::vector<std::string> expect;
  };
  const std::vector<Case> cases = {
      {R"({"model": {"type": "Foo"}})", {"model.type", "Foo"}},
      {"{" + wl + R"(, "normalizer": {"type": "Precompiled", "precompiled_charsmap": "AAAA"}})",
       {"normalizer", "Precompiled"}},
      {"{" + wl + R"(, "pre_tokenizer": {"type": "UnicodeScripts"}})", {"pre_tokenizer", "UnicodeScripts"}},
      {"{" + wl + R"(, "post_processor": {"type": "Fancy"}})", {"post_processor", "Fancy"}},
      {"{" + wl + R"(, "decoder": {"type": "CTC"}})", {"decoder", "CTC"}},
      {"{" + wl + R"(, "normalizer": {"type": "Sequence", "normalizers": [{"type": "NFC"}, {"type": "Nope"}]}})",
       {"normalizer.normalizers[1]", "Nope"}},
      {"{" + wl + R"(, "added_tokens": [{"id": -1, "content": "x"}]})", {"added_tokens[0].id"}},
      {"{" + wl + R"(, "pre_tokenizer": {"type": "Split", "pattern": {"Regex": "(unclosed"}}})",
       {"pre_tokenizer.pattern.Regex", "regex"}},
      {R"({"model": {"type": "Unigram", "vocab": []}})", {"model.vocab", "empty"}},
      {R"({"model": {"type": "Unigram", "unk_id": 5, "vocab": [["a", -1.0]]}})", {"model.unk_id", "5"}},
      {R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": ["a b"]}})", {"model.merges", "ab"}},
      {R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 0}, "merges": []}})", {"model.vocab", "share id 0"}},
      {R"({"model": {"type": "WordPiece", "vocab": {"a": -4}}})", {"model.vocab", "-4"}},
      {R"({"model": {"type": "WordLevel", "vocab": {"a": 2000000000}}})", {"model.vocab", "2000000000"}},
      {"{" + wl + R"(, "added_tokens": [{"id": 99999999999, "content": "x"}]})", {"added_tokens[0].id", "99999999999"}},
      {"{" + wl + R"(, "post_processor": {"type": "BertProcessing", "cls": ["[CLS]", -2], "sep": ["[SEP]", 1]}})",
       {"post_processor.cls"}},
      {"{" + wl + R"(, "post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "[X]"}}],
          "special_tokens": {}}})",
       {"post_processor.single[0]", "[X]"}},
  };
  for (const auto& c : cases) {
    TempDir d;
    const std::string path = d.write("tokenizer.json", c.file);
    try {
      ordo::load_tokenizer(d.str());
      ADD_FAILURE() << "expected ordo::Error for " << c.file;
    } catch (const ordo::Error& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(path), std::string::npos) << msg;
      for (const auto& s : c.expect) EXPECT_NE(msg.find(s), std::string::npos) << "'" << s << "' not in: " << msg;
    }
  }
}

// The tokenizer.json converted from the KJV T5 fixture gives the ids transformers' slow T5Tokenizer
// (legacy=True, over sentencepiece) gave for the fixture's strings, wherever HF's fast tokenizer
// agrees with the slow one.
TEST(HfTokenizerGoldenT5, MatchesTheSlowTokenizerWhereHuggingFaceFastDoes) {
  std::ifstream f(std::string(ORDO_TEST_DATA) + "/fixtures/tokenizers/golden.json");
  ASSERT_TRUE(f);
  const json slow_all = json::parse(f);
  const json* slow = nullptr;
  for (const auto& t : slow_all["tokenizers"])
    if (t["name"] == "t5-kjv-legacy-true") slow = &t;
  ASSERT_NE(slow, nullptr);
  std::map<std::string, const json*> fast;
  for (const auto& c : entry("t5-kjv")["cases"])
    if (c.contains("text")) fast[c["text"].get<std::string>()] = &c;
  const ordo::Tokenizer& tok = tokenizer("t5-kjv");
  size_t agreeing = 0;
  for (const auto& c : (*slow)["cases"]) {
    const std::string text = c["text"];
    ASSERT_TRUE(fast.count(text)) << text;
    const auto ids = c["ids"].get<std::vector<int32_t>>(), with = c["ids_with_special"].get<std::vector<int32_t>>();
    if ((*fast[text])["ids"] != c["ids"] || (*fast[text])["ids_with_special"] != c["ids_with_special"]) continue;
    ++agreeing;
    EXPECT_EQ(tok.encode(text, false), ids) << text;
    EXPECT_EQ(tok.encode(text, true), with) << text;
  }
  EXPECT_EQ(agreeing, (*slow)["cases"].size());  // all 42 agree in tokenizers 0.22
}

std::string base64(const std::string& bytes) {
  static const char* abc = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (size_t i = 0; i < bytes.size(); i += 3) {
    uint32_t v = 0;
    for (size_t k = 0; k < 3; ++k) v = v << 8 | (i + k < bytes.size() ? static_cast<unsigned char>(bytes[i + k]) : 0);
    for (size_t k = 0; k < 4; ++k) out += k <= bytes.size() - i ? abc[v >> (18 - 6 * k) & 63] : '=';
  }
  return out;
}

// A precompiled_charsmap whose darts-clone trie maps the one key "a" to `value` (the pool offset):
// root unit 0 (offset 0), the 'a' node at 0 ^ 'a' = 97 (label 'a', has_leaf, offset 1), its value
// unit at 97 ^ 1 = 96. `root` replaces the root unit (a corrupt trie).
std::string charsmap(uint32_t value, const std::string& pool, uint32_t root = 0) {
  std::vector<uint32_t> units(256, 0);  // darts-clone allocates blocks of 256: every root child slot exists
  units[0] = root;
  units[97] = 'a' | 1u << 8 | 1u << 10;
  units[96] = 0x80000000u | value;
  std::string blob;
  auto put = [&](uint32_t u) {
    for (int k = 0; k < 4; ++k) blob += static_cast<char>(u >> (8 * k) & 0xFF);
  };
  put(static_cast<uint32_t>(units.size() * 4));
  for (uint32_t u : units) put(u);
  return base64(blob + pool);
}

std::string precompiled_wordlevel(const std::string& b64) {
  return json{
      {"normalizer", {{"type", "Precompiled"}, {"precompiled_charsmap", b64}}},
      {"pre_tokenizer", {{"type", "WhitespaceSplit"}}},
      {"model",
       {{"type", "WordLevel"}, {"vocab", {{"A", 0}, {"a", 1}, {"b", 2}, {"<unk>", 3}}}, {"unk_token", "<unk>"}}}}
      .dump();
}

TEST(LoadTokenizerJson, PrecompiledFollowsItsTrie) {
  TempDir d;
  d.write("tokenizer.json", precompiled_wordlevel(charsmap(2, std::string("xyA\0", 4))));
  auto tok = ordo::load_tokenizer(d.str());
  EXPECT_EQ(tok->encode("a b aa", false), (std::vector<int32_t>{0, 2, 3}));  // "a" -> "A", "aa" -> "AA" (unk)
  EXPECT_EQ(tok->tokenize("b a"), (std::vector<std::string>{"b", "A"}));
}

// A malformed charsmap (untrusted input) is an Error naming the file and the normalizer, at load
// or, for trie entries only a lookup reaches, at encode; never a read outside the blob.
TEST(LoadTokenizerJson, MalformedPrecompiledIsAnErrorNamingIt) {
  std::string big_trie(8, '\0');
  big_trie[0] = 64;  // trie of 64 bytes in an 8-byte blob
  std::string odd_trie(12, '\0');
  odd_trie[0] = 6;  // not a multiple of 4
  for (const std::string& b64 : {std::string("not base64!"), std::string("QQ=A"), base64(big_trie), base64(odd_trie),
                                 base64(std::string(4, '\0')), charsmap(0, "\xff\xfe")}) {
    TempDir d;
    const std::string path = d.write("tokenizer.json", precompiled_wordlevel(b64));
    try {
      ordo::load_tokenizer(d.str());
      ADD_FAILURE() << "expected ordo::Error for " << b64;
    } catch (const ordo::Error& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(path), std::string::npos) << msg;
      EXPECT_NE(msg.find("normalizer"), std::string::npos) << msg;
      EXPECT_NE(msg.find("Precompiled"), std::string::npos) << msg;
    }
  }
  // Offsets past the pool, into the middle of a character, and a root pointing outside the trie.
  const std::string corrupt_root = charsmap(0, std::string("A\0", 2), 5000u << 10);
  for (const std::string& b64 : {charsmap(9, std::string("A\0", 2)), charsmap(1, "\xc3\xa9"), corrupt_root}) {
    TempDir d;
    const std::string path = d.write("tokenizer.json", precompiled_wordlevel(b64));
    auto tok = ordo::load_tokenizer(d.str());
    if (b64 != corrupt_root) {
      EXPECT_EQ(tok->encode("b", false), (std::vector<int32_t>{2})) << b64;  // no "b" key
    }
    try {
      tok->encode("b a", false);
      ADD_FAILURE() << "expected ordo::Error for " << b64;
    } catch (const ordo::Error& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(path), std::string::npos) << msg;
      EXPECT_NE(msg.find("Precompiled"), std::string::npos) << msg;
    }
  }
}

TEST(LoadTokenizerJson, EncodeErrorsNameTheProblem) {
  TempDir d;
  // WordLevel without its unk token in the vocabulary: an unknown word cannot be encoded.
  d.write("tokenizer.json", json{{"model", {{"type", "WordLevel"}, {"vocab", {{"a", 0}}}, {"unk_token", "<unk>"}}},
                                 {"pre_tokenizer", {{"type", "WhitespaceSplit"}}}}
                                .dump());
  auto tok = ordo::load_tokenizer(d.str());
  EXPECT_EQ(tok->encode("a a", false), (std::vector<int32_t>{0, 0}));
  try {
    tok->encode("a zebra", false);
    FAIL() << "expected ordo::Error";
  } catch (const ordo::Error& e) {
    EXPECT_NE(std::string(e.what()).find("zebra"), std::string::npos) << e.what();
  }
  TempDir u;
  // Unigram without unk_id: a character no piece covers is an error, not a dropped character.
  u.write("tokenizer.json", R"({"model": {"type": "Unigram", "vocab": [["a", -1.0], ["b", -2.0]]}})");
  auto uni = ordo::load_tokenizer(u.str());
  EXPECT_EQ(uni->encode("ab", false), (std::vector<int32_t>{0, 1}));
  try {
    uni->encode("abc", false);
    FAIL() << "expected ordo::Error";
  } catch (const ordo::Error& e) {
    EXPECT_NE(std::string(e.what()).find("unk_id"), std::string::npos) << e.what();
  }
}

TEST(LoadMarian, BrokenFilesAreErrorsNamingThem) {
  TempDir d;
  fs::copy_file(kDir + "/opus-mt-en-mg/source.spm", d.path / "source.spm");
  fs::copy_file(kDir + "/opus-mt-en-mg/target.spm", d.path / "target.spm");
  d.write("vocab.json", R"({"</s>": 0, "<unk>": 1})");  // no <pad>
  try {
    ordo::load_tokenizer(d.str());
    FAIL() << "expected ordo::Error";
  } catch (const ordo::Error& e) {
    EXPECT_NE(std::string(e.what()).find("vocab.json"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("<pad>"), std::string::npos) << e.what();
  }
  d.write("vocab.json", R"({"</s>": 0, "<unk>": 1, "<pad>": -5})");
  EXPECT_THROW(ordo::load_tokenizer(d.str()), ordo::Error);
  d.write("vocab.json", R"({"</s>": 0, "<unk>": 1, "<pad>": 2})");
  d.write("target.spm", "not a model");
  try {
    ordo::load_tokenizer(d.str());
    FAIL() << "expected ordo::Error";
  } catch (const ordo::Error& e) {
    EXPECT_NE(std::string(e.what()).find("target.spm"), std::string::npos) << e.what();
  }
}

}  // namespace

void expect_stream_matches_decode(const ordo::Tokenizer& tok, const std::vector<int32_t>& context,
                                  const std::vector<int32_t>& ids) {
  std::vector<int32_t> all = context;
  all.insert(all.end(), ids.begin(), ids.end());
  const std::string whole = tok.decode(all, true), head = tok.decode(context, true);
  ASSERT_EQ(whole.compare(0, head.size(), head), 0);
  EXPECT_EQ(ordo::test::stream_text(tok, ids, context, /*skip_special=*/true), whole.substr(head.size()));
}

// Words "a", "b", "x" and " " whose decoder fuses the text and then replaces `from` by `to`.
std::unique_ptr<ordo::Tokenizer> fuse_replace_tokenizer(const TempDir& d, const std::string& from,
                                                        const std::string& to) {
  d.write("tokenizer.json",
          json{{"model",
                {{"type", "WordLevel"},
                 {"vocab", {{"a", 0}, {"b", 1}, {"x", 2}, {" ", 3}, {"<unk>", 4}}},
                 {"unk_token", "<unk>"}}},
               {"pre_tokenizer", {{"type", "WhitespaceSplit"}}},
               {"decoder",
                {{"type", "Sequence"},
                 {"decoders",
                  {{{"type", "Fuse"}}, {{"type", "Replace"}, {"pattern", {{"String", from}}}, {"content", to}}}}}}}
              .dump());
  return ordo::load_tokenizer(d.str());
}

// After a long run of tokens that cannot start a window, StreamDecoder decodes behind an "a"
// token and the run's last id; a decoder that rewrites "a" with what follows ("a b" -> "X" over the
// fused text) sends it back to the whole run, and the stream still equals decode(), which has no
// "a b".
TEST(StreamDecoder, AnchorRewrittenByTheDecoderFallsBackToTheWholeRun) {
  TempDir d;
  const auto tok = fuse_replace_tokenizer(d, "a b", "X");
  ASSERT_EQ(tok->decode({0, 3, 1}), "X");
  std::vector<int32_t> ids{2};
  ids.insert(ids.end(), 64, 3);  // the window restarts behind "a" and the last " ", right before "b"
  ids.insert(ids.end(), {1, 2});
  EXPECT_EQ(ordo::test::stream_text(*tok, ids, {}, /*skip_special=*/true), "x" + std::string(64, ' ') + "bx");
  EXPECT_EQ(tok->decode(ids, true), "x" + std::string(64, ' ') + "bx");
}

// A decoder that rewrites across a token boundary (" b" -> " B" over the fused text) sees the
// window's last id beside the next one even where the window restarts behind the anchor.
TEST(StreamDecoder, RewriteAcrossARestartSeesTheLastId) {
  TempDir d;
  const auto tok = fuse_replace_tokenizer(d, " b", " B");
  for (size_t spaces : {63, 64, 65, 130}) {
    SCOPED_TRACE(spaces);
    std::vector<int32_t> ids{2};
    ids.insert(ids.end(), spaces, 3);
    ids.push_back(1);
    EXPECT_EQ(ordo::test::stream_text(*tok, ids, {}, /*skip_special=*/true), "x" + std::string(spaces, ' ') + "B");
    EXPECT_EQ(tok->decode(ids, true), "x" + std::string(spaces, ' ') + "B");
  }
}

// A "</w>" suffix puts the space on the token before it, so no anchor can stand for "hel" in
// "hel" + skipped specials + "lo</w>": the specials are dropped instead, at any count.
TEST(StreamDecoder, SkippedSpecialsInsideAWordOfASuffixBpe) {
  const auto tok = ordo::load_tokenizer(kDir + "/bpe-suffix");
  const std::vector<int32_t> hello = tok->encode("hello", false);
  const int32_t eot = tok->encode("<|endoftext|>", false).at(0);
  ASSERT_GE(hello.size(), 2u);
  for (size_t n : {10, 65, 200}) {
    SCOPED_TRACE(n);
    std::vector<int32_t> ids{hello[0]};
    ids.insert(ids.end(), n, eot);
    ids.insert(ids.end(), hello.begin() + 1, hello.end());
    EXPECT_EQ(ordo::test::stream_text(*tok, ids, {}, /*skip_special=*/true), "hello");
    const std::vector<int32_t> context(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(n + 1));
    expect_stream_matches_decode(*tok, context, std::vector<int32_t>(hello.begin() + 1, hello.end()));
  }
}

// T5's and Marian's slow tokenizers hold a trailing space back until text follows; a context
// ending in lone spaces (any number) and then skipped specials keeps them for the first word.
TEST(StreamDecoder, ContextEndingInHeldBackSpacesKeepsThem) {
  ordo::TokenizerOptions t5;
  t5.legacy = false;
  t5.sp_style = "t5";
  t5.extra_ids = 100;
  const std::vector<std::unique_ptr<ordo::Tokenizer>> toks = [&] {
    std::vector<std::unique_ptr<ordo::Tokenizer>> v;
    v.push_back(ordo::load_sentencepiece(std::string(ORDO_TEST_DATA) + "/fixtures/tokenizers/t5/spiece.model", t5));
    v.push_back(ordo::load_marian(kDir + "/opus-mt-en-mg"));
    return v;
  }();
  for (const auto& tok : toks) {
    int32_t space = -1;  // the lone "▁"
    for (int32_t id = 0; id < tok->vocab_size() && space < 0; ++id)
      if (tok->id_to_piece(id) == "\xE2\x96\x81") space = id;
    ASSERT_GE(space, 0);
    ASSERT_GE(tok->eos_id(), 0);
    const std::vector<int32_t> y = tok->encode(" y", false);
    for (size_t spaces : {1, 10, 70})
      for (size_t specials : {0, 70}) {
        SCOPED_TRACE(std::string(tok->kind()) + ", " + std::to_string(spaces) + " spaces, " + std::to_string(specials) +
                     " specials");
        std::vector<int32_t> context = tok->encode("x", false);
        context.insert(context.end(), spaces, space);
        context.insert(context.end(), specials, tok->eos_id());
        expect_stream_matches_decode(*tok, context, y);
      }
  }
}
