// load_tokenizer: the kind it picks from a directory's files, tokenizer_config.json over the
// defaults, and errors naming the directory or file.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <sstream>

#include <nlohmann/json.hpp>

#include "ordo/tensor.hpp"
#include "ordo/tokenizer.hpp"
#include "support/slow_tokenizers.hpp"
#include "support/stream.hpp"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace ordo::test::slow_tokenizers;

namespace {

TEST(LoadTokenizer, PicksKindFromFiles) {
  {
    TempDir d;
    d.copy(kTokDir + "/llama2/tokenizer.model", "tokenizer.model");
    auto tok = ordo::load_tokenizer(d.str());
    EXPECT_STREQ(tok->kind(), "sentencepiece");
    EXPECT_EQ(tok->vocab_size(), 32000);
    EXPECT_EQ(tok->bos_id(), 1);
    EXPECT_EQ(tok->eos_id(), 2);
    EXPECT_EQ(tok->encode("Hello world"), (std::vector<int32_t>{1, 15043, 3186}));  // Llama default: BOS
  }
  {
    TempDir d;
    d.copy(kTokDir + "/t5/spiece.model", "spiece.model");
    d.write("config.json", R"({"model_type": "t5", "eos_token_id": 1, "pad_token_id": 0})");
    auto tok = ordo::load_tokenizer(d.str());
    EXPECT_STREQ(tok->kind(), "sentencepiece");
    EXPECT_EQ(tok->vocab_size(), 2100);
    EXPECT_EQ(tok->id_to_piece(2099), "<extra_id_0>");
    EXPECT_EQ(tok->id_to_piece(2000), "<extra_id_99>");
    EXPECT_EQ(tok->pad_id(), 0);
    const auto& g = golden_entry("t5-kjv-legacy-true")["cases"][1];
    EXPECT_EQ(tok->encode(g["text"]), g["ids_with_special"].get<std::vector<int32_t>>());  // T5: EOS appended
    // Extra ids eat the spaces around them and decode apart, joined with spaces.
    const auto ids = tok->encode("In the <extra_id_0> beginning", false);
    EXPECT_NE(std::find(ids.begin(), ids.end(), 2099), ids.end());
    EXPECT_EQ(tok->decode(ids), "In the <extra_id_0> beginning");
  }
  {
    TempDir d;
    d.copy(kTokDir + "/gpt2/vocab.json", "vocab.json");
    d.copy(kTokDir + "/gpt2/merges.txt", "merges.txt");
    auto tok = ordo::load_tokenizer(d.str());
    EXPECT_STREQ(tok->kind(), "bpe");
    EXPECT_EQ(tok->vocab_size(), 50257);
    EXPECT_EQ(tok->eos_id(), 50256);
    EXPECT_EQ(tok->encode("Hello world<|endoftext|>"), (std::vector<int32_t>{15496, 995, 50256}));
  }
  {
    TempDir d;
    d.write("tokenizer.json", gpt2_tokenizer_json());
    d.write("config.json", R"({"model_type": "gpt2", "bos_token_id": 50256, "eos_token_id": 50256})");
    auto tok = ordo::load_tokenizer(d.str());
    EXPECT_STREQ(tok->kind(), "bpe");
    EXPECT_EQ(tok->eos_id(), 50256);
    EXPECT_EQ(tok->decode({15496, 995, 50256}), "Hello world<|endoftext|>");
    EXPECT_EQ(tok->decode({15496, 995, 50256}, true), "Hello world");
  }
  {
    TempDir d;
    d.copy(kTokDir + "/bert/vocab.txt", "vocab.txt");
    auto tok = ordo::load_tokenizer(d.str());
    EXPECT_STREQ(tok->kind(), "wordpiece");
    const auto& g = golden_entry("bert-kjv-uncased")["cases"][1];
    EXPECT_EQ(tok->encode(g["text"]), g["ids_with_special"].get<std::vector<int32_t>>());
  }
  {
    // The bundled model directory: Llama-family sentencepiece with config.json ids.
    auto tok = ordo::load_tokenizer(kStories);
    EXPECT_STREQ(tok->kind(), "sentencepiece");
    EXPECT_EQ(tok->vocab_size(), 512);
    EXPECT_EQ(tok->bos_id(), 1);
    EXPECT_EQ(tok->eos_id(), 2);
    const auto& c = stories_golden()["tokenizer"]["cases"][4];  // "Once upon a time, ..."
    auto ids = c["ids"].get<std::vector<int32_t>>();
    EXPECT_EQ(tok->encode(c["text"], false), ids);
    ids.insert(ids.begin(), 1);
    EXPECT_EQ(tok->encode(c["text"], true), ids);
    EXPECT_EQ(tok->decode(ids), "<s>" + c["decoded"].get<std::string>());  // HF keeps specials
    EXPECT_EQ(tok->decode(ids, true), c["decoded"].get<std::string>());
  }
}

TEST(LoadTokenizer, TokenizerConfigOverridesDefaults) {
  TempDir d;
  d.copy(kTokDir + "/llama2/tokenizer.model", "tokenizer.model");
  d.write("tokenizer_config.json", R"({"legacy": false, "add_bos_token": false, "add_eos_token": true})");
  auto tok = ordo::load_tokenizer(d.str());
  const json& g = golden_entry("llama2-legacy-false")["cases"];
  const json& c = g[g.size() - 1];  // the special-looking strings differ between legacy modes
  auto ids = c["ids"].get<std::vector<int32_t>>();
  EXPECT_EQ(tok->encode(c["text"], false), ids);
  ids.push_back(2);
  EXPECT_EQ(tok->encode(c["text"], true), ids);
  EXPECT_EQ(tok->decode(c["ids"].get<std::vector<int32_t>>()), c["decoded"].get<std::string>());
  // Options beat the directory.
  ordo::TokenizerOptions o;
  o.add_eos = false;
  o.add_bos = true;
  EXPECT_EQ(ordo::load_tokenizer(d.str(), o)->encode("Hello world"), (std::vector<int32_t>{1, 15043, 3186}));
}

TEST(LoadTokenizer, EmptyDirectoryErrorNamesIt) {
  TempDir d;
  d.write("config.json", R"({"model_type": "llama"})");
  try {
    ordo::load_tokenizer(d.str());
    FAIL() << "expected ordo::Error";
  } catch (const ordo::Error& e) {
    EXPECT_NE(std::string(e.what()).find(d.str()), std::string::npos) << e.what();
  }
  EXPECT_THROW(ordo::load_tokenizer((d.path / "missing").string()), ordo::Error);
}

TEST(LoadTokenizer, BadFilesAreErrorsNamingThem) {
  TempDir d;
  d.write("tokenizer.model", "not a sentencepiece model");
  try {
    ordo::load_tokenizer(d.str());
    FAIL() << "expected ordo::Error";
  } catch (const ordo::Error& e) {
    EXPECT_NE(std::string(e.what()).find("tokenizer.model"), std::string::npos) << e.what();
  }
  TempDir j;
  j.write("tokenizer.json", R"({"model": {"type": "SentencePieceBPE", "vocab": []}})");  // not a tokenizers model
  try {
    ordo::load_tokenizer(j.str());
    FAIL() << "expected ordo::Error";
  } catch (const ordo::Error& e) {
    EXPECT_NE(std::string(e.what()).find("model.type"), std::string::npos) << e.what();
  }
}

}  // namespace
