// `ordo quantize --format gguf` held to llama.cpp: the F32 file of the bundled model equals what
// llama.cpp's convert_hf_to_gguf.py wrote (tests/data/gguf/stories260K-f32.gguf: tensors, names,
// metadata), Q8_0/Q4_0 tensors equal llama.cpp's quantizer's bytes, llama.cpp's greedy ids on the
// files ordo wrote (tests/data/gguf/ordo_written.json) equal ordo's, and a kill mid-write leaves
// the earlier file.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>

#include "../models/src/weights/gguf.hpp"
#include "ordo/ordo.hpp"
#include "support/cli.hpp"

using nlohmann::json;
using ordo::GgufFile;
using ordo::GgufTensorInfo;

namespace {

const std::string kGguf = std::string(ORDO_TEST_DATA) + "/gguf";
const std::string kStories = std::string(ORDO_SOURCE_DIR) + "/models/stories260K";

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// FNV-1a 64 of a file's bytes, as tools/fixtures/make_gguf_written_fixtures.sh records it.
std::string fnv1a(const std::string& bytes) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : bytes) h = (h ^ c) * 1099511628211ull;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

std::string written(const std::string& in, const std::string& dtype) {
  const std::string out = ordo::test::make_temp_dir("gguf-w-" + dtype) + "/m.gguf";
  ordo::write_gguf_model(in, out, dtype);
  return out;
}

std::map<std::string, const GgufTensorInfo*> by_name(const GgufFile& g) {
  std::map<std::string, const GgufTensorInfo*> m;
  for (const GgufTensorInfo& t : g.tensors()) m[t.name] = &t;
  return m;
}

const unsigned char* bytes_of(const GgufFile& g, const GgufTensorInfo& t) {
  return g.mapped_bytes().first + g.data_offset() + t.offset;
}

// Same tensor names, dims, types and bytes.
void expect_same_tensors(const GgufFile& got, const GgufFile& want) {
  const auto g = by_name(got), w = by_name(want);
  ASSERT_EQ(g.size(), w.size());
  for (const auto& [name, wt] : w) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(g.count(name));
    const GgufTensorInfo& gt = *g.at(name);
    EXPECT_EQ(gt.dims, wt->dims);
    ASSERT_EQ(ordo::ggml_type_name(gt.type), ordo::ggml_type_name(wt->type));
    ASSERT_EQ(gt.bytes, wt->bytes);
    EXPECT_EQ(std::memcmp(bytes_of(got, gt), bytes_of(want, *wt), gt.bytes), 0);
  }
}

// Every metadata entry of llama.cpp's file but general.size_label (the converter's guess from the
// parameter count) is in ordo's with the same type and value.
void expect_same_metadata(const GgufFile& got, const GgufFile& want) {
  for (const auto& [key, wv] : want.metadata()) {
    if (key == "general.size_label") continue;
    SCOPED_TRACE(key);
    const ordo::GgufValue* gv = got.find(key);
    ASSERT_NE(gv, nullptr);
    EXPECT_EQ(gv->type, wv.type);
    EXPECT_EQ(gv->i, wv.i);
    EXPECT_EQ(gv->f, wv.f);
    EXPECT_EQ(gv->s, wv.s);
    ASSERT_EQ(gv->items.size(), wv.items.size());
    for (size_t k = 0; k < wv.items.size(); ++k) {
      EXPECT_EQ(gv->items[k].s, wv.items[k].s) << k;
      EXPECT_EQ(gv->items[k].f, wv.items[k].f) << k;
      EXPECT_EQ(gv->items[k].i, wv.items[k].i) << k;
    }
  }
}

}  // namespace

TEST(GgufWriter, F32OfTheBundledModelEqualsLlamaCppsConverter) {
  const GgufFile got = GgufFile::open(written(kStories, "f32"));
  const GgufFile want = GgufFile::open(kGguf + "/stories260K-f32.gguf");
  EXPECT_EQ(got.version(), 3u);
  expect_same_metadata(got, want);
  expect_same_tensors(got, want);
}

TEST(GgufWriter, F16KeepsNormsF32AndRoundsTheRest) {
  const GgufFile got = GgufFile::open(written(kStories, "f16"));
  const GgufFile want = GgufFile::open(kGguf + "/stories260K-f32.gguf");
  EXPECT_EQ(got.get_int("general.file_type"), 1);
  const auto w = by_name(want);
  for (const GgufTensorInfo& t : got.tensors()) {
    SCOPED_TRACE(t.name);
    EXPECT_EQ(ordo::ggml_type_name(t.type), t.dims.size() == 1 ? "F32" : "F16");
    const ordo::Tensor a = got.tensor(t).to_f32(), b = want.tensor(*w.at(t.name));
    for (int64_t i = 0; i < a.numel(); ++i) {
      const float v = b.f32()[i];
      ASSERT_EQ(a.f32()[i], t.dims.size() == 1 ? v : ordo::f16_to_f32(ordo::f32_to_f16(v))) << i;
    }
  }
}

TEST(GgufWriter, ReadBackGivesTheSafetensorsModelsLogits) {
  const ordo::Model g = ordo::Model::load(written(kStories, "f32")), s = ordo::Model::load(kStories);
  const std::vector<int32_t> ids = {1, 403, 407, 261, 378};
  const ordo::Tensor a = g.forward(ids).logits, b = s.forward(ids).logits;
  ASSERT_EQ(a.shape, b.shape);
  for (int64_t i = 0; i < a.numel(); ++i) EXPECT_NEAR(a.f32()[i], b.f32()[i], 1e-4) << i;
}

TEST(GgufWriter, KillMidWriteLeavesTheEarlierFile) {
  const std::string out = ordo::test::make_temp_dir("gguf-kill") + "/m.gguf";
  ordo::write_gguf_model(kStories, out, "f32");
  const std::string before = slurp(out);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {  // killed at the 10th tensor: the header and nine tensors are in the temporary
    ordo::write_gguf_model(kStories, out, "f16", false, [](size_t k, size_t, const std::string&) {
      if (k == 10) ::raise(SIGKILL);
    });
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGKILL);
  EXPECT_EQ(slurp(out), before);
  EXPECT_EQ(GgufFile::open(out).get_int("general.file_type"), 0);
}

TEST(GgufWriter, RefusesAForeignFileAndTheInputItself) {
  const std::string d = ordo::test::make_temp_dir("gguf-refuse");
  { std::ofstream(d + "/notes.txt") << "keep me"; }
  EXPECT_THROW(ordo::write_gguf_model(kStories, d + "/notes.txt", "f32"), ordo::Error);
  EXPECT_EQ(slurp(d + "/notes.txt"), "keep me");
  EXPECT_THROW(ordo::write_gguf_model(kStories, kStories + "/x.gguf", "f32"), ordo::Error);
  EXPECT_THROW(ordo::write_gguf_model(kStories, d + "/x.gguf", "int8"), ordo::Error);
  const ordo::test::CliResult r =
      ordo::test::run_cli("quantize -m " + kStories + " --dtype q4_0 --format dir -o " + d + "/dir");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--format gguf"), std::string::npos) << r.err;
}

TEST(GgufWriter, CliWritesAFileOrdoRuns) {
  const std::string out = ordo::test::make_temp_dir("gguf-cli") + "/m.gguf";
  const ordo::test::CliResult r =
      ordo::test::run_cli("quantize -m " + kStories + " --format gguf --dtype f32 -o " + out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(slurp(out), slurp(written(kStories, "f32")));  // deterministic
  ordo::test::expect_greedy_reference_ids("-m " + out);
}

// llama.cpp's quantizer wrote the Q8_0/Q4_0 fixtures from its converter's F32 file: ordo's file from
// the directory, and from that F32 GGUF file, has the same types and bytes per tensor.
TEST(GgufWriter, Q8_0AndQ4_0EqualLlamaCppsQuantizer) {
  for (const std::string q : {"q8_0", "q4_0"}) {
    SCOPED_TRACE(q);
    const GgufFile want = GgufFile::open(kGguf + "/stories260K-" + q + ".gguf");
    const GgufFile from_dir = GgufFile::open(written(kStories, q));
    expect_same_tensors(from_dir, want);
    expect_same_metadata(from_dir, want);
    expect_same_tensors(GgufFile::open(written(kGguf + "/stories260K-f32.gguf", q)), want);
  }
}

// llama.cpp read the files ordo writes (tools/fixtures/make_gguf_written_fixtures.sh ran its
// greedy decoding on them): the file written now is that same file, and ordo's greedy ids on it
// equal llama.cpp's (ordo stops at EOS, llama.cpp's run does not: compared up to there). Q4_0 too:
// the W4A8 block kernels round the activations as llama.cpp's matmul does.
TEST(GgufWriter, LlamaCppReadsOrdosFilesAndDecodesAsOrdo) {
  std::ifstream f(kGguf + "/ordo_written.json");
  const json ref = json::parse(f);
  for (const std::string q : {"f32", "f16", "q8_0", "q4_0"}) {
    SCOPED_TRACE(q);
    const std::string path = written(kStories, q);
    const std::string bytes = slurp(path);
    EXPECT_EQ(bytes.size(), ref[q]["bytes"].get<size_t>());
    EXPECT_EQ(fnv1a(bytes), ref[q]["fnv1a64"].get<std::string>());
    ordo::ModelOptions o;
    o.threads = 1;
    const ordo::Model m = ordo::Model::load(path, o);
    for (const json& c : ref[q]["cases"]) {
      ordo::GenerateParams p;
      p.max_new_tokens = ref["n_new"].get<int>();
      const auto want = c["greedy"].get<std::vector<int32_t>>();
      const ordo::GenerateResult r = m.generate_ids(c["prompt"].get<std::vector<int32_t>>(), p, nullptr, true);
      ASSERT_FALSE(r.ids.empty());
      ASSERT_LE(r.ids.size(), want.size());
      EXPECT_EQ(r.ids, std::vector<int32_t>(want.begin(), want.begin() + static_cast<std::ptrdiff_t>(r.ids.size())));
    }
  }
}
