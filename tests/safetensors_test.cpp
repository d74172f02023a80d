// Tests of the safetensors reader and writer: fixtures, round trips and hostile headers.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ordo/safetensors.hpp"

using ordo::DType;
using ordo::SafeTensors;
using ordo::Tensor;

namespace {

// A fresh directory per test (the test binary may run concurrently with other builds).
class SafeTensorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "ordo_st_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::string path(const std::string& name) const { return dir_ + "/" + name; }

  // Writes `header_len` (default: header.size()) as the u64 prefix, then `header`, then `data`.
  std::string write_raw(const std::string& name, const std::string& header, const std::string& data,
                        std::optional<uint64_t> header_len = std::nullopt) {
    std::string p = path(name);
    std::ofstream f(p, std::ios::binary);
    uint64_t n = header_len ? *header_len : header.size();
    unsigned char le[8];
    for (int i = 0; i < 8; ++i) le[i] = static_cast<unsigned char>(n >> (8 * i));
    f.write(reinterpret_cast<const char*>(le), 8);
    f.write(header.data(), static_cast<std::streamsize>(header.size()));
    f.write(data.data(), static_cast<std::streamsize>(data.size()));
    return p;
  }
  std::string write_bytes(const std::string& name, const std::string& bytes) {
    std::string p = path(name);
    std::ofstream(p, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return p;
  }

  std::string dir_;
};

// Runs `fn`, expects ordo::Error whose message contains every string of `parts`.
void expect_error(const std::function<void()>& fn, const std::vector<std::string>& parts) {
  try {
    fn();
  } catch (const ordo::Error& e) {
    std::string msg = e.what();
    for (const std::string& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' not in: " << msg;
    return;
  }
  ADD_FAILURE() << "no ordo::Error thrown";
}

void expect_open_error(const std::string& file, const std::vector<std::string>& parts) {
  std::vector<std::string> all = parts;
  all.insert(all.begin(), file);
  expect_error([&] { SafeTensors::open(file); }, all);
}

float f32_at(const Tensor& t, int64_t i) {  // data may be unaligned: memcpy
  float v;
  std::memcpy(&v, static_cast<const char*>(t.data) + 4 * i, 4);
  return v;
}

std::string repeat(size_t n, char c = '\0') { return std::string(n, c); }

}  // namespace

TEST_F(SafeTensorsTest, LoadsLlamaFixture) {
  const std::string file = std::string(ORDO_TEST_DATA) + "/fixtures/llama/model.safetensors";
  SafeTensors st = SafeTensors::open(file);
  EXPECT_EQ(st.path(), file);
  std::vector<std::string> names = st.names();
  ASSERT_EQ(names.size(), 21u);
  EXPECT_EQ(names.front(), "lm_head.weight");
  EXPECT_EQ(names.back(), "model.norm.weight");
  EXPECT_TRUE(st.has("model.layers.1.mlp.down_proj.weight"));
  EXPECT_FALSE(st.has("model.layers.2.mlp.down_proj.weight"));
  EXPECT_EQ(st.metadata().at("format"), "pt");

  const Tensor& emb = st.get("model.embed_tokens.weight");
  EXPECT_EQ(emb.dtype, DType::F32);
  EXPECT_EQ(emb.shape, (std::vector<int64_t>{256, 64}));
  // Expected values read from the file itself with python3 (json + struct.unpack_from('<f', ...)).
  EXPECT_EQ(f32_at(emb, 0), 0.325023711f);              // [0, 0], bits 0x3ea66982
  EXPECT_EQ(f32_at(emb, 1), 0.186996952f);              // [0, 1], bits 0x3e3f7c21
  EXPECT_EQ(f32_at(emb, 256 * 64 - 1), -0.141002432f);  // [255, 63], bits 0xbe1062f1

  const Tensor& k = st.get("model.layers.1.self_attn.k_proj.weight");
  EXPECT_EQ(k.shape, (std::vector<int64_t>{32, 64}));
  EXPECT_EQ(f32_at(k, 0), -0.206356436f);              // [0, 0]
  EXPECT_EQ(f32_at(k, 5 * 64 + 7), -0.144678786f);     // [5, 7]
  EXPECT_EQ(f32_at(k, 32 * 64 - 1), -0.00687586702f);  // [31, 63]

  // Tensors keep the mapping alive after the SafeTensors object is gone.
  Tensor norm = st.get("model.norm.weight");
  st = SafeTensors();
  EXPECT_EQ(norm.shape, (std::vector<int64_t>{64}));
  EXPECT_EQ(f32_at(norm, 0), 0.957126081f);
  EXPECT_EQ(f32_at(norm, 63), 1.11063981f);
  EXPECT_EQ(norm.to_f32().f32()[63], 1.11063981f);
}

TEST_F(SafeTensorsTest, RoundTripsAllDtypesAndMetadata) {
  Tensor a = Tensor::from({2, 3}, {1.f, -2.f, 3.5f, 0.f, 1e-8f, -7.25f});
  Tensor h = Tensor::zeros({5}, DType::F16);
  Tensor b = Tensor::zeros({1, 3}, DType::BF16);
  Tensor q = Tensor::zeros({7}, DType::I8);
  Tensor empty = Tensor::zeros({0, 4});
  Tensor scalar = Tensor::from({}, {42.f});
  for (int i = 0; i < 5; ++i) static_cast<uint16_t*>(h.data)[i] = ordo::f32_to_f16(0.5f * i - 1.f);
  for (int i = 0; i < 3; ++i) static_cast<uint16_t*>(b.data)[i] = ordo::f32_to_bf16(3.f * i + 0.25f);
  for (int i = 0; i < 7; ++i) static_cast<int8_t*>(q.data)[i] = static_cast<int8_t>(i * 37 - 128);

  const std::vector<std::pair<std::string, Tensor>> in = {{"z.i8", q},   {"a.f32", a},       {"m.f16", h},
                                                          {"b.bf16", b}, {"e.empty", empty}, {"s.scalar", scalar}};
  const std::map<std::string, std::string> meta = {{"format", "pt"}, {"ordo.note", "caf\xc3\xa9 \"quoted\""}};
  const std::string file = path("rt.safetensors");
  ordo::write_safetensors(file, in, meta);

  // Header length is a multiple of 8 and the data section is exactly the packed tensors.
  std::ifstream f(file, std::ios::binary | std::ios::ate);
  const uint64_t file_size = static_cast<uint64_t>(f.tellg());
  f.seekg(0);
  uint64_t n = 0;
  f.read(reinterpret_cast<char*>(&n), 8);
  EXPECT_EQ(n % 8, 0u);
  EXPECT_EQ(file_size, 8 + n + 7 + 24 + 10 + 6 + 0 + 4);

  SafeTensors st = SafeTensors::open(file);
  EXPECT_EQ(st.metadata(), meta);
  ASSERT_EQ(st.size(), in.size());
  const char* prev_end = nullptr;
  for (const auto& [name, t] : in) {
    SCOPED_TRACE(name);
    const Tensor& r = st.get(name);
    EXPECT_EQ(r.dtype, t.dtype);
    EXPECT_EQ(r.shape, t.shape);
    ASSERT_EQ(r.nbytes(), t.nbytes());
    EXPECT_NE(r.data, nullptr);  // zero-size tensors too
    EXPECT_EQ(std::memcmp(r.data, t.data, t.nbytes()), 0);
    // Packed in the given order, without gaps.
    if (prev_end) {
      EXPECT_EQ(static_cast<const char*>(r.data), prev_end);
    }
    prev_end = static_cast<const char*>(r.data) + r.nbytes();
  }
  // b.bf16 sits at an odd offset (after 7 + 24 + 10 bytes): mapped data may be unaligned, so memcpy.
  uint16_t bits;
  std::memcpy(&bits, static_cast<const char*>(st.get("b.bf16").data) + 4, 2);
  EXPECT_EQ(ordo::bf16_to_f32(bits), 6.25f);
}

TEST_F(SafeTensorsTest, RewritingAMappedFileKeepsOldTensorsValid) {
  const std::string file = path("w.safetensors");
  ordo::write_safetensors(file, {{"x", Tensor::from({2}, {1.f, 2.f})}});
  Tensor old = SafeTensors::open(file).get("x");
  ordo::write_safetensors(file, {{"x", Tensor::from({3}, {4.f, 5.f, 6.f})}});  // replaces, never truncates
  EXPECT_EQ(f32_at(old, 1), 2.f);
  Tensor now = SafeTensors::open(file).get("x");
  EXPECT_EQ(now.shape, (std::vector<int64_t>{3}));
  EXPECT_EQ(f32_at(now, 2), 6.f);
  EXPECT_FALSE(SafeTensors::open(file).metadata().count("format"));
}

TEST_F(SafeTensorsTest, WriterRejectsBadInput) {
  const std::string file = path("bad_write.safetensors");
  Tensor t = Tensor::from({1}, {1.f});
  expect_error([&] { ordo::write_safetensors(file, {{"w", t}, {"w", t}}); }, {file, "'w'", "more than once"});
  Tensor nodata;
  nodata.shape = {4};
  expect_error([&] { ordo::write_safetensors(file, {{"w", nodata}}); }, {file, "'w'", "no data"});
  expect_error([&] { ordo::write_safetensors(file, {{"__metadata__", t}}); }, {file, "__metadata__"});
  expect_error(
      [&] {
        ordo::write_safetensors(path("no/such/dir/x.safetensors"), {{"w", t}});
      },
      {"no/such/dir/x.safetensors", "cannot create"});
  EXPECT_FALSE(std::filesystem::exists(file));
}

TEST_F(SafeTensorsTest, AcceptsGapsUnalignedOffsetsAndZeroSizeTensors) {
  // I8 [3] at [0,3), a 2-byte gap, F32 [2] at the unaligned offset 5 ([5,13)), a zero-size tensor
  // inside another tensor's range, and trailing bytes after the last tensor.
  std::string data = "\x01\x02\x03" + repeat(2);
  float v[2] = {1.5f, -3.f};
  data.append(reinterpret_cast<const char*>(v), 8);
  data += "trail";
  const std::string file = write_raw("gaps.safetensors",
                                     R"({"q":{"dtype":"I8","shape":[3],"data_offsets":[0,3]},)"
                                     R"("f":{"dtype":"F32","shape":[2],"data_offsets":[5,13]},)"
                                     R"("z":{"dtype":"BF16","shape":[4,0],"data_offsets":[7,7]},)"
                                     R"("__metadata__":{}})",
                                     data);
  SafeTensors st = SafeTensors::open(file);
  EXPECT_EQ(st.names(), (std::vector<std::string>{"f", "q", "z"}));
  EXPECT_EQ(f32_at(st.get("f"), 0), 1.5f);
  EXPECT_EQ(f32_at(st.get("f"), 1), -3.f);
  EXPECT_EQ(static_cast<const int8_t*>(st.get("q").data)[2], 3);
  EXPECT_EQ(st.get("z").numel(), 0);
  EXPECT_TRUE(st.metadata().empty());
}

TEST_F(SafeTensorsTest, EmptyHeaderObjectIsAnEmptyFile) {
  SafeTensors st = SafeTensors::open(write_raw("none.safetensors", "{}      ", ""));
  EXPECT_EQ(st.size(), 0u);
}

TEST_F(SafeTensorsTest, RejectsMissingFile) { expect_open_error(path("absent.safetensors"), {"cannot open"}); }

TEST_F(SafeTensorsTest, RejectsEmptyFile) {
  expect_open_error(write_bytes("empty.safetensors", ""), {"too short"});
  expect_open_error(write_bytes("seven.safetensors", std::string("\x01\x00\x00\x00\x00\x00\x00", 7)), {"too short"});
}

TEST_F(SafeTensorsTest, RejectsHeaderLengthPastEndOfFile) {
  const std::string header = R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})";
  expect_open_error(write_raw("trunc.safetensors", header, "", header.size() + 100), {"truncated", "header length"});
  // Header ends exactly at EOF but the declared header length is one byte more.
  expect_open_error(write_raw("trunc1.safetensors", header, "", header.size() + 1), {"truncated"});
}

TEST_F(SafeTensorsTest, RejectsAbsurdHeaderLengthWithoutOverflow) {
  expect_open_error(write_raw("huge.safetensors", "{}", "", UINT64_MAX), {"absurdly large"});
  expect_open_error(write_raw("huge2.safetensors", "{}", "", UINT64_MAX - 7), {"absurdly large"});
  expect_open_error(write_raw("big.safetensors", "{}", "", 200'000'000), {"absurdly large"});
}

TEST_F(SafeTensorsTest, RejectsFileCutInTheDataSection) {
  const std::string file = write_raw("cut.safetensors",
                                     R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                     R"("b":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})",
                                     repeat(12));
  expect_open_error(file, {"tensor 'b'", "data_offsets", "[8, 16]", "past the end", "12 bytes"});
}

TEST_F(SafeTensorsTest, RejectsOverlappingTensors) {
  const std::string file = write_raw("overlap.safetensors",
                                     R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                     R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                                     repeat(12));
  expect_open_error(file, {"'a' [0, 8]", "'b' [4, 12]", "overlap"});
  // Identical ranges overlap too.
  expect_open_error(write_raw("same.safetensors",
                              R"({"a":{"dtype":"F16","shape":[2],"data_offsets":[0,4]},)"
                              R"("b":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]}})",
                              repeat(4)),
                    {"'a'", "'b'", "overlap"});
}

TEST_F(SafeTensorsTest, RejectsUnknownDtype) {
  expect_open_error(
      write_raw("unk.safetensors", R"({"w":{"dtype":"F33","shape":[1],"data_offsets":[0,4]}})", repeat(4)),
      {"tensor 'w'", "unknown dtype 'F33'"});
  expect_open_error(
      write_raw("lower.safetensors", R"({"w":{"dtype":"f32","shape":[1],"data_offsets":[0,4]}})", repeat(4)),
      {"tensor 'w'", "unknown dtype"});
  expect_open_error(write_raw("num.safetensors", R"({"w":{"dtype":4,"shape":[1],"data_offsets":[0,4]}})", repeat(4)),
                    {"tensor 'w'", "'dtype' must be a string"});
}

TEST_F(SafeTensorsTest, RejectsUnsupportedDtype) {
  for (const char* dt : {"F64", "I32", "I64", "U8", "BOOL", "F8_E4M3"}) {
    SCOPED_TRACE(dt);
    std::string header = std::string(R"({"w":{"dtype":")") + dt + R"(","shape":[1],"data_offsets":[0,1]}})";
    expect_open_error(write_raw(std::string("uns_") + dt, header, repeat(8)),
                      {"tensor 'w'", std::string("unsupported dtype '") + dt + "'"});
  }
}

TEST_F(SafeTensorsTest, RejectsShapeNotMatchingByteRange) {
  expect_open_error(
      write_raw("mismatch.safetensors", R"({"w":{"dtype":"F16","shape":[2,3],"data_offsets":[0,16]}})", repeat(16)),
      {"tensor 'w'", "shape [2, 3]", "12 bytes", "[0, 16]", "16 bytes"});
}

TEST_F(SafeTensorsTest, RejectsShapeWithOverflowingProduct) {
  // 2^32 * 2^32 overflows int64; 2^62 elements * 4 bytes overflows u64.
  expect_open_error(
      write_raw("ovf.safetensors", R"({"w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,0]}})", ""),
      {"tensor 'w'", "overflows"});
  expect_open_error(
      write_raw("ovf2.safetensors", R"({"w":{"dtype":"F32","shape":[4611686018427387904],"data_offsets":[0,0]}})", ""),
      {"tensor 'w'", "overflows"});
  // Entries beyond int64 are rejected as entries.
  expect_open_error(
      write_raw("ovf3.safetensors", R"({"w":{"dtype":"I8","shape":[18446744073709551615],"data_offsets":[0,0]}})", ""),
      {"tensor 'w'", "'shape' entry 0"});
}

TEST_F(SafeTensorsTest, RejectsNegativeOrNonIntegerShapeEntries) {
  expect_open_error(write_raw("neg.safetensors", R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,0]}})", ""),
                    {"tensor 'w'", "'shape' entry 0", "non-negative integer", "-1"});
  expect_open_error(
      write_raw("flt.safetensors", R"({"w":{"dtype":"F32","shape":[1,2.0],"data_offsets":[0,8]}})", repeat(8)),
      {"tensor 'w'", "'shape' entry 1", "2.0"});
  expect_open_error(
      write_raw("str.safetensors", R"({"w":{"dtype":"F32","shape":["2"],"data_offsets":[0,8]}})", repeat(8)),
      {"tensor 'w'", "'shape' entry 0"});
  expect_open_error(write_raw("obj.safetensors", R"({"w":{"dtype":"F32","shape":2,"data_offsets":[0,8]}})", repeat(8)),
                    {"tensor 'w'", "'shape' must be an array"});
  expect_open_error(write_raw("noshape.safetensors", R"({"w":{"dtype":"F32","data_offsets":[0,8]}})", repeat(8)),
                    {"tensor 'w'", "'shape' missing"});
}

TEST_F(SafeTensorsTest, RejectsBadDataOffsets) {
  expect_open_error(
      write_raw("rev.safetensors", R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[8,4]}})", repeat(8)),
      {"tensor 'w'", "[8, 4]", "begin > end"});
  expect_open_error(
      write_raw("three.safetensors", R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4,8]}})", repeat(8)),
      {"tensor 'w'", "'data_offsets' must be an array of two integers"});
  expect_open_error(
      write_raw("negoff.safetensors", R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[-4,0]}})", repeat(8)),
      {"tensor 'w'", "'data_offsets' must be two non-negative integers"});
  expect_open_error(write_raw("hugeoff.safetensors",
                              R"({"w":{"dtype":"I8","shape":[1],"data_offsets":[18446744073709551615,0]}})", ""),
                    {"tensor 'w'", "begin > end"});
  expect_open_error(write_raw("nooff.safetensors", R"({"w":{"dtype":"F32","shape":[1]}})", repeat(8)),
                    {"tensor 'w'", "'data_offsets' missing"});
}

TEST_F(SafeTensorsTest, RejectsHeaderThatIsNotJson) {
  expect_open_error(write_raw("notjson.safetensors", R"({"w":{"dtype":"F32",)", repeat(8)),
                    {"header is not valid JSON", "line 1, column"});
  expect_open_error(write_raw("zero.safetensors", "", repeat(8)), {"header is not valid JSON"});
  expect_open_error(write_raw("utf8.safetensors", "{\"\xff\":{}}", ""), {"header is not valid JSON"});
}

TEST_F(SafeTensorsTest, RejectsMalformedHeaderStructure) {
  expect_open_error(write_raw("array.safetensors", "[1,2]", ""), {"header must be a JSON object"});
  expect_open_error(write_raw("entry.safetensors", R"({"w":[1]})", ""), {"tensor 'w'", "must be a JSON object"});
  expect_open_error(write_raw("meta.safetensors", R"({"__metadata__":{"format":1}})", ""),
                    {"'__metadata__' entry 'format' must be a string"});
  expect_open_error(write_raw("meta2.safetensors", R"({"__metadata__":"pt"})", ""),
                    {"'__metadata__' must be an object"});
  expect_open_error(write_raw("dup.safetensors",
                              R"({"w":{"dtype":"I8","shape":[1],"data_offsets":[0,1]},)"
                              R"("w":{"dtype":"I8","shape":[1],"data_offsets":[1,2]}})",
                              repeat(2)),
                    {"'w'", "more than once"});
}

TEST_F(SafeTensorsTest, GetOfMissingTensorNamesFileAndTensor) {
  const std::string file = path("one.safetensors");
  ordo::write_safetensors(file, {{"present", Tensor::from({1}, {1.f})}});
  SafeTensors st = SafeTensors::open(file);
  expect_error([&] { st.get("absent.weight"); }, {file + ": missing tensor 'absent.weight'"});
}
