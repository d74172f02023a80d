// The GGUF reader on hand-built files: every metadata type, Q8_0/Q4_0 dequantisation against
// hand-computed values, hostile files (truncated, lying counts and offsets, huge strings, unknown
// types, misaligned data), each an ordo::Error naming the file and the field; GPT-2 vocabulary lists.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "../models/src/weights/gguf.hpp"
#include "ordo/ordo.hpp"
#include "support/cli.hpp"
#include "support/gguf_builder.hpp"

using ordo::Error;
using ordo::GgufFile;
using ordo::GgufType;
using ordo::test::GgufBuilder;

namespace {

const std::string kLabel = "t.gguf";

// GgufFile views tensor data in the bytes it parsed, so the bytes must outlive it: a temporary is
// refused at compile time.
GgufFile parse(const std::string& b) {
  return GgufFile::parse(reinterpret_cast<const unsigned char*>(b.data()), b.size(), kLabel);
}
GgufFile parse(std::string&&) = delete;

// parse() of `b` fails with an Error starting with the file's name and containing `what`.
void expect_error(const std::string& b, const std::string& what) {
  try {
    parse(b);
    ADD_FAILURE() << "no error; expected one containing: " << what;
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.rfind(kLabel + ": ", 0), 0u) << m;
    EXPECT_NE(m.find(what), std::string::npos) << m;
  }
}

std::string f32_bytes(const std::vector<float>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), 4 * v.size());
}

GgufBuilder small() {
  GgufBuilder b;
  b.add_string("general.architecture", "llama");
  b.add_u32("llama.block_count", 5);
  b.add_strings("tokenizer.ggml.tokens", {"<unk>", "a", "bc"});
  b.add_tensor("w", {4, 2}, 0, f32_bytes({1, 2, 3, 4, 5, 6, 7, 8}));
  return b;
}

}  // namespace

TEST(GgufReader, ReadsMetadataOfEveryKindAndTensorInfos) {
  GgufBuilder b = small();
  b.add_i32("i", -7);
  b.add_f32("f", 0.25f);
  b.add_bool("yes", true);
  b.add_f32s("scores", {-1.5f, 2});
  b.add_i32s("types", {1, 6});
  const std::string bytes = b.bytes();
  const GgufFile g = parse(bytes);
  EXPECT_EQ(g.version(), 3u);
  EXPECT_EQ(g.get_string("general.architecture"), "llama");
  EXPECT_EQ(g.get_int("llama.block_count"), 5);
  EXPECT_EQ(g.get_int("i"), -7);
  EXPECT_DOUBLE_EQ(g.get_float("f", 0), 0.25);
  EXPECT_TRUE(g.get_bool("yes", false));
  const auto& toks = g.get_array("tokenizer.ggml.tokens", GgufType::String);
  ASSERT_EQ(toks.size(), 3u);
  EXPECT_EQ(toks[2].s, "bc");
  EXPECT_FLOAT_EQ(static_cast<float>(g.get_array("scores", GgufType::F32)[0].f), -1.5f);
  EXPECT_EQ(g.get_array("types", GgufType::I32)[1].i, 6);
  ASSERT_EQ(g.tensors().size(), 1u);
  EXPECT_EQ(g.tensors()[0].dims, (std::vector<int64_t>{4, 2}));
  const ordo::Tensor t = g.tensor(g.tensors()[0]);
  EXPECT_EQ(t.shape, (std::vector<int64_t>{2, 4}));  // outermost first
  EXPECT_EQ(t.f32()[5], 6.0f);
  EXPECT_EQ(g.data_offset() % 32, 0u);
}

TEST(GgufReader, TypedLookupsNameTheKey) {
  const std::string bytes = small().bytes();
  const GgufFile g = parse(bytes);
  EXPECT_THROW(
      {
        try {
          g.get_int("general.architecture");
        } catch (const Error& e) {
          EXPECT_STREQ(e.what(), "t.gguf: metadata 'general.architecture' must be an integer, got string");
          throw;
        }
      },
      Error);
  EXPECT_THROW(g.get_string("missing.key"), Error);
  EXPECT_THROW(g.get_array("tokenizer.ggml.tokens", GgufType::F32), Error);
}

TEST(GgufReader, DequantisesQ8_0AndQ4_0) {
  // Q8_0: d = 0.5 (fp16 0x3800), q = j - 16 for element j.
  std::string q8("\x00\x38", 2);
  for (int j = 0; j < 32; ++j) q8 += static_cast<char>(j - 16);
  // Q4_0: d = 2 (fp16 0x4000); byte j: low nibble j (element j), high nibble 15 - j (element j + 16).
  std::string q4("\x00\x40", 2);
  for (int j = 0; j < 16; ++j) q4 += static_cast<char>(j | (15 - j) << 4);
  GgufBuilder b;
  b.add_tensor("q8", {32}, 8, q8);
  b.add_tensor("q4", {32}, 2, q4);
  b.add_tensor("h", {2}, 1, std::string("\x00\x3c\x00\xc0", 4));  // F16 1, -2
  b.add_tensor("bf", {1}, 30, std::string("\x80\x3f", 2));        // BF16 1
  const std::string bytes = b.bytes();
  const GgufFile g = parse(bytes);
  const ordo::Tensor a = g.tensor(g.tensors()[0]), c = g.tensor(g.tensors()[1]);
  for (int j = 0; j < 32; ++j) EXPECT_EQ(a.f32()[j], 0.5f * static_cast<float>(j - 16)) << j;
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(c.f32()[j], 2.0f * static_cast<float>(j - 8)) << j;
    EXPECT_EQ(c.f32()[j + 16], 2.0f * static_cast<float>(15 - j - 8)) << j;
  }
  const ordo::Tensor h = g.tensor(g.tensors()[2]).to_f32(), bf = g.tensor(g.tensors()[3]).to_f32();
  EXPECT_EQ(h.f32()[0], 1.0f);
  EXPECT_EQ(h.f32()[1], -2.0f);
  EXPECT_EQ(bf.f32()[0], 1.0f);
}

TEST(GgufReader, TypesOrdoDoesNotReadAreNamed) {
  GgufBuilder b;
  b.add_tensor("blk.0.ffn_down.weight", {32}, 20, std::string(18, '\0'));  // IQ4_NL
  const std::string bytes = b.bytes();
  const GgufFile g = parse(bytes);
  try {
    g.tensor(g.tensors()[0]);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "t.gguf: tensor 'blk.0.ffn_down.weight' has type IQ4_NL, which ordo does not read yet "
                 "(it reads F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 and Q2_K-Q6_K)");
  }
}

// Q4_1, Q5_0, Q5_1 and the k-quants Q2_K..Q6_K against llama.cpp's gguf-py (numpy, written apart
// from ggml's C) on seeded random blocks (tests/data/gguf/ggml_decode.json, made by
// tools/fixtures/make_ggml_decode_golden.py). As floats, and as a 2-D linear weight: Q4_K kept as
// it is (the engine's decoder reads it), the others re-encoded as Q8_0 blocks, within Q8_0's
// rounding of them.
TEST(GgufReader, DecodesTheOtherBlockTypesAsGgufPy) {
  std::ifstream f(std::string(ORDO_TEST_DATA) + "/gguf/ggml_decode.json");
  ASSERT_TRUE(f) << "tests/data/gguf/ggml_decode.json";
  const nlohmann::json golden = nlohmann::json::parse(f);
  const std::map<std::string, uint32_t> types = {{"Q4_1", 3},  {"Q5_0", 6},  {"Q5_1", 7},  {"Q2_K", 10},
                                                 {"Q3_K", 11}, {"Q4_K", 12}, {"Q5_K", 13}, {"Q6_K", 14}};
  ASSERT_EQ(golden.at("types").size(), types.size());
  for (const auto& [name, type] : types) {
    SCOPED_TRACE(name);
    const nlohmann::json& c = golden.at("types").at(name);
    const std::string hex = c.at("bytes").get<std::string>();
    std::string raw;
    for (size_t i = 0; i + 1 < hex.size(); i += 2) raw += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
    const std::vector<float> want = c.at("values").get<std::vector<float>>();
    const int64_t n = static_cast<int64_t>(want.size());
    GgufBuilder b;
    const auto un = static_cast<uint64_t>(n);
    b.add_tensor("flat", {un}, type, raw);
    b.add_tensor("rows", {un / 2, 2}, type, raw);  // two rows: a linear weight of 2 outputs
    const std::string bytes = b.bytes();
    const GgufFile g = parse(bytes);
    const ordo::Tensor flat = g.tensor(g.tensors()[0]), blocks = g.tensor(g.tensors()[1], true);
    ASSERT_EQ(flat.dtype, ordo::DType::F32);
    const bool q4k = name == "Q4_K";
    ASSERT_EQ(blocks.dtype, q4k ? ordo::DType::Q4_K : ordo::DType::Q8_0);
    const ordo::Tensor q8 = blocks.to_f32();
    int exact = 0;
    for (int64_t i = 0; i < n; ++i) {
      EXPECT_NEAR(flat.f32()[i], want[i], 1e-6f * std::max(1.0f, std::fabs(want[i]))) << i;
      exact += flat.f32()[i] == want[i];
      if (q4k) {
        EXPECT_EQ(q8.f32()[i], flat.f32()[i]) << i;
        continue;
      }
      float amax = 0;
      for (int64_t j = i / 32 * 32; j < i / 32 * 32 + 32; ++j) amax = std::max(amax, std::fabs(want[j]));
      // Half a step of d = amax / 127, plus |q| <= 127 times fp16's rounding of d (2^-11 of it).
      EXPECT_LE(std::fabs(q8.f32()[i] - want[i]), (0.5f + 127.0f / 2048) * amax / 127.0f * 1.001f) << i;
    }
    EXPECT_GE(exact, n * 99 / 100) << "values differing from gguf-py's in the last bit";
  }
}

TEST(GgufReaderHostile, EveryTruncationIsANamedError) {
  const std::string full = small().bytes();
  for (size_t n = 0; n < full.size(); ++n) {
    SCOPED_TRACE(n);
    const std::string cut = full.substr(0, n);
    EXPECT_THROW(parse(cut), Error);
  }
}

TEST(GgufReaderHostile, LyingCountsAndHugeStrings) {
  std::string b = small().bytes();
  ordo::test::poke_u64(b, 8, uint64_t{1} << 40);
  expect_error(b, "tensor count 1099511627776 cannot fit the file");
  b = small().bytes();
  ordo::test::poke_u64(b, 16, uint64_t{1} << 60);
  expect_error(b, "metadata count 1152921504606846976 cannot fit the file");
  b = small().bytes();
  ordo::test::poke_u64(b, 24, uint64_t{1} << 62);  // the first key's length
  expect_error(b, "metadata entry 0's key (a string of 4611686018427387904 bytes)");
  GgufBuilder a;
  a.add_strings("tokenizer.ggml.tokens", {"x"});
  b = a.bytes();
  const size_t count_at = b.find("tokenizer.ggml.tokens") + 21 + 4 + 4;
  ordo::test::poke_u64(b, count_at, uint64_t{1} << 61);
  expect_error(b, "metadata 'tokenizer.ggml.tokens': array count 2305843009213693952 of string cannot fit");
}

TEST(GgufReaderHostile, UnknownTypesVersionsAndDuplicates) {
  std::string b = small().bytes();
  ordo::test::poke_u32(b, 24 + 8 + 20, 99);  // general.architecture's value type
  expect_error(b, "metadata 'general.architecture': unknown value type 99");
  b = small().bytes();
  ordo::test::poke_u32(b, 4, 1);
  expect_error(b, "GGUF version 1 is not supported");
  b = small().bytes();
  ordo::test::poke_u32(b, b.find("w\x02\x00\x00\x00", 0, 5) + 1 + 4 + 16, 77);
  expect_error(b, "tensor 'w': unknown tensor type 77");
  GgufBuilder d;
  d.add_u32("k", 1);
  d.add_u32("k", 2);
  expect_error(d.bytes(), "metadata 'k' appears twice");
  b = std::string("GGUX") + small().bytes().substr(4);
  expect_error(b, "not a GGUF file");
}

TEST(GgufReaderHostile, MisalignedOutOfBoundsAndBadShapes) {
  std::string b = small().bytes();
  const size_t offset_at = b.find("w\x02\x00\x00\x00", 0, 5) + 1 + 4 + 16 + 4;
  ordo::test::poke_u64(b, offset_at, 4);
  expect_error(b, "tensor 'w': data offset 4 is not a multiple of the alignment 32");
  ordo::test::poke_u64(b, offset_at, uint64_t{1} << 40);
  expect_error(b, "tensor 'w': data [1099511627776, 1099511627808) of the data blob runs past the end of the file");
  GgufBuilder q;
  q.add_tensor("q", {33}, 8, std::string(68, '\0'));
  expect_error(q.bytes(), "tensor 'q': dimension 0 = 33 is not a multiple of Q8_0's block of 32");
  GgufBuilder big;
  big.add_tensor("big", {uint64_t{1} << 40, uint64_t{1} << 40}, 0, "");
  expect_error(big.bytes(), "tensor 'big': dimension 1 = 1099511627776 makes the tensor impossibly large");
  // 2^62 F32 elements once made 2^64 bytes, which wrapped to 0 and passed the end-of-file check.
  GgufBuilder wrap;
  wrap.add_tensor("wrap", {uint64_t{1} << 31, uint64_t{1} << 31}, 0, "");
  expect_error(wrap.bytes(), "tensor 'wrap': dimension 1 = 2147483648 makes the tensor impossibly large");
  GgufBuilder al(3, 48);
  expect_error(al.bytes(), "metadata 'general.alignment' must be a power of two, got 48");
}

TEST(GgufReader, HonoursGeneralAlignment) {
  GgufBuilder b(2, 64);
  b.add_tensor("a", {3}, 0, f32_bytes({1, 2, 3}));
  b.add_tensor("b", {1}, 0, f32_bytes({9}));
  const std::string bytes = b.bytes();
  const GgufFile g = parse(bytes);
  EXPECT_EQ(g.version(), 2u);
  EXPECT_EQ(g.alignment(), 64u);
  EXPECT_EQ(g.tensors()[1].offset, 64u);
  EXPECT_EQ(g.data_offset() % 64, 0u);
  EXPECT_EQ(g.tensor(g.tensors()[1]).f32()[0], 9.0f);
}

// GPT-2's byte-level BPE from a GGUF file's tokens and merges equals load_bpe on the vocab.json and
// merges.txt of the same vocabulary (tests/data/tokenizers/bpe-bytelevel's).
TEST(GgufTokenizer, Gpt2ListsEqualVocabJsonAndMerges) {
  std::ifstream in(std::string(ORDO_TEST_DATA) + "/tokenizers/bpe-bytelevel/tokenizer.json");
  const nlohmann::json tj = nlohmann::json::parse(in);
  std::vector<std::string> tokens(tj["model"]["vocab"].size());
  for (auto it = tj["model"]["vocab"].begin(); it != tj["model"]["vocab"].end(); ++it)
    tokens.at(it->get<size_t>()) = it.key();
  std::vector<std::string> merges;
  std::string merges_txt = "#version: 0.2\n";
  for (const auto& m : tj["model"]["merges"]) {
    merges.push_back(m[0].get<std::string>() + " " + m[1].get<std::string>());
    merges_txt += merges.back() + "\n";
  }
  const std::string dir = ordo::test::make_temp_dir("gguf-bpe");
  std::ofstream(dir + "/vocab.json") << tj["model"]["vocab"].dump();
  std::ofstream(dir + "/merges.txt") << merges_txt;
  GgufBuilder b;
  b.add_string("tokenizer.ggml.model", "gpt2");
  b.add_string("tokenizer.ggml.pre", "gpt-2");
  b.add_strings("tokenizer.ggml.tokens", tokens);
  b.add_strings("tokenizer.ggml.merges", merges);
  std::ofstream(dir + "/t.gguf", std::ios::binary) << b.bytes();
  const auto g = ordo::load_model_tokenizer(dir + "/t.gguf");
  const auto ref = ordo::load_bpe(dir + "/vocab.json", dir + "/merges.txt");
  EXPECT_STREQ(g->kind(), ref->kind());
  for (const std::string text : {"Hello world", " the cat sat on the mat.", "naïve café 123\n\ttabs", ""}) {
    SCOPED_TRACE(text);
    const auto ids = ref->encode(text, false);
    EXPECT_EQ(g->encode(text, false), ids);
    EXPECT_EQ(g->decode(ids), ref->decode(ids));
  }
  EXPECT_FALSE(ref->encode("the cat", false).empty());
  GgufBuilder l;
  l.add_string("tokenizer.ggml.model", "gpt2");
  l.add_string("tokenizer.ggml.pre", "llama-bpe");
  l.add_strings("tokenizer.ggml.tokens", tokens);
  std::ofstream(dir + "/l.gguf", std::ios::binary) << l.bytes();
  EXPECT_THROW(ordo::load_model_tokenizer(dir + "/l.gguf"), Error);
}
