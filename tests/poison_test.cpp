// Poisoned weights (issue 31 item 5): NaN/Inf named at load, F16 range refused, non-finite logits stop a run.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>

#include "ordo/finite.hpp"
#include "ordo/ops.hpp"
#include "ordo/ordo.hpp"
#include "ordo/perplexity.hpp"
#include "ordo/safetensors.hpp"
#include "ordo/weights.hpp"
#include "support/cli.hpp"
#include "support/golden.hpp"

namespace fs = std::filesystem;
using ordo::Error;
using ordo::Model;
using ordo::Tensor;
using ordo::test::run_cli;
using ordo::test::shell_quote;

namespace {

const std::string kStories = ordo::test::model_dir("stories260K");
const std::string kQ = "model.layers.0.self_attn.q_proj.weight";
const std::string kDown = "model.layers.1.mlp.down_proj.weight";
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// A copy of model directory `src` in a fresh temp dir whose model.safetensors has element `index`
// of tensor `name` set to `value` (every other byte as it was).
std::string poisoned_copy(const std::string& src, const std::string& name, int64_t index, float value,
                          const std::string& tag = "poison") {
  const std::string dir = ordo::test::make_temp_dir(tag);
  for (const auto& e : fs::directory_iterator(src))
    if (e.is_regular_file() && e.path().filename() != "model.safetensors")
      fs::copy_file(e.path(), dir / e.path().filename());
  const ordo::SafeTensors st = ordo::SafeTensors::open(src + "/model.safetensors");
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (const auto& [n, t] : st.tensors()) {
    Tensor c = Tensor::zeros(t.shape, t.dtype);
    std::memcpy(c.data, t.data, t.nbytes());
    if (n == name) {
      EXPECT_EQ(c.dtype, ordo::DType::F32) << n;
      EXPECT_LT(index, c.numel()) << n;
      c.f32()[index] = value;
    }
    tensors.emplace_back(n, c);
  }
  ordo::write_safetensors(dir + "/model.safetensors", tensors, st.metadata());
  return dir;
}

std::string load_error(const std::string& dir, ordo::ModelOptions o = {}) {
  try {
    Model::load(dir, o);
  } catch (const Error& e) {
    return e.what();
  }
  return "(loaded)";
}

bool has(const std::string& s, const std::string& needle) { return s.find(needle) != std::string::npos; }

}  // namespace

TEST(Finite, FirstNonfiniteFindsEachKindInEveryDtype) {
  std::vector<float> x(300000, 1.5f);
  EXPECT_EQ(ordo::first_nonfinite(x.data(), static_cast<int64_t>(x.size())), -1);
  for (float bad : {kNaN, kInf, -kInf}) {
    x[200001] = bad;
    x[250000] = bad;
    EXPECT_EQ(ordo::first_nonfinite(x.data(), static_cast<int64_t>(x.size())), 200001);
    Tensor t = Tensor::from({3, 100000}, x);
    EXPECT_EQ(ordo::index_str(t.shape, 200001), "[2, 1]");
    for (ordo::DType d : {ordo::DType::F16, ordo::DType::BF16}) {
      Tensor h = Tensor::zeros(t.shape, d);
      auto* p = static_cast<uint16_t*>(h.data);
      for (int64_t i = 0; i < t.numel(); ++i)
        p[i] = d == ordo::DType::F16 ? ordo::f32_to_f16(x[i]) : ordo::f32_to_bf16(x[i]);
      EXPECT_EQ(ordo::first_nonfinite(h), 200001);
      EXPECT_EQ(ordo::count_nonfinite(h), 2);
    }
    x[200001] = x[250000] = 1.5f;
  }
  // The largest finite values are finite in each format.
  x[7] = std::numeric_limits<float>::max();
  EXPECT_EQ(ordo::first_nonfinite(x.data(), static_cast<int64_t>(x.size())), -1);
  EXPECT_EQ(ordo::value_str(kNaN), "NaN");
  EXPECT_EQ(ordo::value_str(-kInf), "-inf");
  EXPECT_EQ(ordo::value_str(70000.0f), "70000");
}

// Rows shorter than one vector of 8 dropped their NaN: the max skipped it, saw only −inf and took
// the row for a fully masked one (zeros), so a NaN query or key vanished from prompts of up to 7
// tokens. NaN now stays NaN at every length; a masked row still gives zeros.
TEST(Finite, SoftmaxKeepsNaNAtEveryLength) {
  for (int64_t n = 1; n <= 17; ++n) {
    std::vector<float> x(static_cast<size_t>(n), kNaN);
    EXPECT_TRUE(std::isnan(ordo::softmax_unnormalized(x.data(), n))) << n;
    for (float v : x) EXPECT_TRUE(std::isnan(v)) << n;
    std::vector<float> mixed(static_cast<size_t>(n), -kInf);
    mixed[static_cast<size_t>(n - 1)] = kNaN;
    EXPECT_TRUE(std::isnan(ordo::softmax_unnormalized(mixed.data(), n))) << n;
    std::vector<float> masked(static_cast<size_t>(n), -kInf);
    EXPECT_EQ(ordo::softmax_unnormalized(masked.data(), n), 0.0f) << n;
    for (float v : masked) EXPECT_EQ(v, 0.0f) << n;
  }
}

TEST(Poison, NaNInProjectionNamesTensorIndexValueAndFile) {
  const std::string dir = poisoned_copy(kStories, kQ, 5, kNaN);
  const std::string e = load_error(dir);
  EXPECT_TRUE(has(e, "tensor '" + kQ + "' holds NaN at [0, 5]")) << e;
  EXPECT_TRUE(has(e, dir + "/model.safetensors")) << e;
  EXPECT_TRUE(has(e, "1 of its 4096 values are not finite")) << e;
  EXPECT_TRUE(has(e, "--allow-nonfinite")) << e;
  fs::remove_all(dir);
}

TEST(Poison, InfInEmbeddingAndNormNamed) {
  for (const auto& [name, index, value] : std::vector<std::tuple<std::string, int64_t, float>>{
           {"model.embed_tokens.weight", 64 * 7 + 3, kInf}, {"model.norm.weight", 9, -kInf}}) {
    const std::string dir = poisoned_copy(kStories, name, index, value);
    const std::string e = load_error(dir);
    EXPECT_TRUE(has(e, "tensor '" + name + "' holds " + ordo::value_str(value))) << e;
    fs::remove_all(dir);
  }
}

TEST(Poison, AllowNonfiniteWarnsThenGenerationStopsAtNaNLogits) {
  const std::string dir = poisoned_copy(kStories, kDown, 11, kNaN);
  ordo::ModelOptions o;
  o.allow_nonfinite = true;
  Model m = Model::load(dir, o);
  ASSERT_EQ(m.load_warnings().size(), 1u);
  EXPECT_TRUE(has(m.load_warnings()[0], "tensor '" + kDown + "' holds NaN at [0, 11]")) << m.load_warnings()[0];
  const std::vector<int32_t> prompt = {1, 403, 407};
  for (const bool beams : {false, true}) {
    for (const float temperature : {0.0f, 0.8f}) {
      ordo::GenerateParams p;
      p.max_new_tokens = 5;
      p.sampling.temperature = temperature;
      if (beams) p.beams.num_beams = 2;
      std::vector<int32_t> shown;
      try {
        m.generate_ids(prompt, p, [&](int32_t id) {
          shown.push_back(id);
          return true;
        });
        ADD_FAILURE() << "generation succeeded";
      } catch (const Error& e) {
        EXPECT_TRUE(has(e.what(), "logits at position 2 are NaN")) << e.what();
        EXPECT_TRUE(has(e.what(), "check with ordo inspect")) << e.what();
      }
      EXPECT_TRUE(shown.empty()) << "a token was produced from NaN logits";
    }
  }
  // Perplexity: an error naming the first scored position, not a NaN result.
  std::vector<int32_t> text(40);
  for (size_t i = 0; i < text.size(); ++i) text[i] = static_cast<int32_t>(1 + (i * 37) % 500);
  try {
    ordo::perplexity(m.engine(), text, 16, 0);
    ADD_FAILURE() << "perplexity succeeded";
  } catch (const Error& e) {
    EXPECT_TRUE(has(e.what(), "logits at position 0 are NaN")) << e.what();
  }
  // Embeddings: an error rather than a NaN vector.
  try {
    m.embed_ids({ordo::EncodeRequest{{1, 403, 407}, {}, {}}});
    ADD_FAILURE() << "embedding succeeded";
  } catch (const Error& e) {
    EXPECT_TRUE(has(e.what(), "the embedding of input 0 is not finite (NaN at dimension")) << e.what();
  }
  fs::remove_all(dir);
}

TEST(Poison, F16OverflowRefusedNamingTensorAndValueF32Works) {
  const std::string dir = poisoned_copy(kStories, kQ, 64 * 3 + 17, 70000.0f);
  ordo::ModelOptions f16;
  f16.dtype = ordo::DType::F16;
  const std::string e = load_error(dir, f16);
  EXPECT_TRUE(has(e, "tensor '" + kQ + "' holds 70000 at [3, 17], beyond F16's range")) << e;
  // F32 (as stored) and BF16 (F32's range) hold it: the run is finite.
  for (const std::optional<ordo::DType> d :
       {std::optional<ordo::DType>{}, std::optional<ordo::DType>{ordo::DType::BF16}}) {
    ordo::ModelOptions o;
    o.dtype = d;
    Model m = Model::load(dir, o);
    EXPECT_TRUE(m.load_warnings().empty());
    ordo::ForwardOutput out = m.forward({1, 403, 407, 1, 2, 3, 4, 5, 6, 7, 8, 9});
    EXPECT_EQ(ordo::first_nonfinite(out.logits), -1);
    ordo::GenerateParams p;
    p.max_new_tokens = 4;
    p.sampling.temperature = 0;
    EXPECT_EQ(m.generate_ids({1, 403, 407}, p).ids.size(), 4u);
  }
  // 65504 is F16's largest value and 65519 rounds to it: both load.
  for (float ok : {65504.0f, -65519.0f}) {
    const std::string d2 = poisoned_copy(kStories, kQ, 3, ok);
    EXPECT_EQ(load_error(d2, f16), "(loaded)") << ok;
    fs::remove_all(d2);
  }
  fs::remove_all(dir);
}

TEST(Poison, F16OverflowInSplitFusedWeightNamesCheckpointTensor) {
  // GPT-2's c_attn is a transposed, fused [in, 3·out] Conv1D split into q, k and v: the error still
  // names the checkpoint tensor and its own index.
  const std::string name = "transformer.h.1.attn.c_attn.weight";
  const std::string dir = poisoned_copy(ordo::test::model_dir("gpt2"), name, 192 * 5 + 130, -70000.0f);
  ordo::ModelOptions o;
  o.load_tokenizer = false;
  o.dtype = ordo::DType::F16;
  const std::string e = load_error(dir, o);
  EXPECT_TRUE(has(e, "tensor '" + name + "' holds -70000 at [5, 130], beyond F16's range")) << e;
  fs::remove_all(dir);
}

TEST(Poison, Int8RefusesNonfiniteEvenWhenAllowed) {
  const std::string dir = poisoned_copy(kStories, kQ, 5, kInf);
  ordo::ModelOptions o;
  o.allow_nonfinite = true;
  o.dtype = ordo::DType::I8;
  const std::string e = load_error(dir, o);
  EXPECT_TRUE(has(e, "tensor '" + kQ +
                         "' holds inf at [0, 5] (1 of its 4096 values are not finite): int8 quantization "
                         "cannot represent"))
      << e;
  fs::remove_all(dir);
}

// Property: a NaN, +inf or -inf at a random element of any tensor of the bundled model is refused
// at load, naming exactly that tensor and element.
TEST(Poison, RandomPoisonInEveryTensorIsNamedExactly) {
  const ordo::SafeTensors st = ordo::SafeTensors::open(kStories + "/model.safetensors");
  std::mt19937 rng(31);
  const float kinds[] = {kNaN, kInf, -kInf};
  int cases = 0;
  for (const auto& [name, t] : st.tensors()) {
    const int64_t index = std::uniform_int_distribution<int64_t>(0, t.numel() - 1)(rng);
    const float v = kinds[cases % 3];
    const std::string dir = poisoned_copy(kStories, name, index, v);
    const std::string e = load_error(dir);
    EXPECT_TRUE(has(e, "tensor '" + name + "' holds " + ordo::value_str(v) + " at " + ordo::index_str(t.shape, index)))
        << name << " " << index << ": " << e;
    for (const auto& other : st.names())
      if (other != name) {
        EXPECT_FALSE(has(e, "'" + other + "'")) << e;
      }
    fs::remove_all(dir);
    ++cases;
  }
  EXPECT_EQ(cases, 47);  // the embedding, 9 per layer x 5, the final norm
}

TEST(PoisonCli, RunRefusesThenAllowedRunStopsOnNaNLogits) {
  const std::string dir = poisoned_copy(kStories, kDown, 11, kNaN);
  const std::string m = " -m " + shell_quote(dir);
  auto r = run_cli("run" + m + " -p 'Once upon' -n 5");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(has(r.err, "tensor '" + kDown + "' holds NaN at [0, 11]")) << r.err;
  EXPECT_EQ(r.out.find("<unk>"), std::string::npos) << r.out;
  for (const char* decoding : {"--temp 0", "--temp 0.8", "--num-beams 2"}) {
    r = run_cli("run" + m + " --allow-nonfinite -p 'Once upon' -n 5 " + decoding);
    EXPECT_NE(r.exit_code, 0) << decoding;
    EXPECT_TRUE(has(r.err, "ordo: warning: ")) << r.err;
    EXPECT_TRUE(has(r.err, "logits at position ")) << r.err;
    EXPECT_TRUE(has(r.err, " are NaN")) << r.err;
    EXPECT_EQ(r.out.find("<unk>"), std::string::npos) << r.out;
  }
  // ppl: an error, not "perplexity nan".
  const std::string text = ordo::test::make_temp_dir("poison-ppl") + "/text.txt";
  std::ofstream(text) << "Once upon a time, there was a little girl named Lily. She loved to play outside in the sun. "
                         "One day, she saw a big red ball in the park and ran to get it.\n";
  r = run_cli("ppl" + m + " --allow-nonfinite --text " + shell_quote(text) + " --ctx 16");
  EXPECT_NE(r.exit_code, 0) << r.out;
  EXPECT_TRUE(has(r.err, "logits at position 0 are NaN")) << r.err;
  fs::remove_all(fs::path(text).parent_path());
  fs::remove_all(dir);
}

TEST(PoisonCli, ForwardWritesNaNValuesAndFailsForEveryLength) {
  const std::string dir = poisoned_copy(kStories, kQ, 5, kNaN);
  const std::string out = ordo::test::make_temp_dir("poison-fwd") + "/logits.npy";
  for (const char* ids : {"1", "1,403,407", "1,2,3,4,5,6,7", "1,2,3,4,5,6,7,8,9,10,11,12"}) {
    auto r = run_cli("forward -m " + shell_quote(dir) + " --allow-nonfinite --ids " + ids + " -o " + shell_quote(out));
    EXPECT_NE(r.exit_code, 0) << ids;
    EXPECT_TRUE(has(r.err, "logits at position 0 are NaN")) << ids << ": " << r.err;
    EXPECT_TRUE(fs::exists(out)) << ids;
    fs::remove(out);
  }
  fs::remove_all(dir);
}

TEST(PoisonCli, F16OverflowRefusedByRunAndQuantize) {
  const std::string dir = poisoned_copy(kStories, kQ, 64 * 3 + 17, 70000.0f);
  auto r = run_cli("run -m " + shell_quote(dir) + " --dtype f16 -p 'Once upon' -n 3");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(has(r.err, "tensor '" + kQ + "' holds 70000 at [3, 17], beyond F16's range")) << r.err;
  const std::string out = ordo::test::make_temp_dir("poison-q") + "/f16";
  r = run_cli("quantize -m " + shell_quote(dir) + " --dtype f16 -o " + shell_quote(out));
  EXPECT_NE(r.exit_code, 0) << r.out;
  EXPECT_TRUE(has(r.err, "tensor '" + kQ + "' holds 70000 at [3, 17], beyond F16's range")) << r.err;
  EXPECT_FALSE(fs::exists(out + "/model.safetensors"));
  // As stored (F32) the model runs: 70000 is finite.
  r = run_cli("run -m " + shell_quote(dir) + " -p 'Once upon' -n 3 --temp 0");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  // bf16 has F32's range: quantize writes it.
  r = run_cli("quantize -m " + shell_quote(dir) + " --dtype bf16 -o " + shell_quote(out + "-bf16"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  fs::remove_all(dir);
  fs::remove_all(fs::path(out).parent_path());
}

// A PyTorch checkpoint: the tensor's bytes are poisoned in place in a copy of the .bin (the zip is
// stored uncompressed; its offset found through the mapping ordo reads it by).
TEST(Poison, PytorchBinNaNNamedWithFile) {
  const std::string src = std::string(ORDO_TEST_DATA) + "/checkpoints/gpt2-bin";
  const std::string dir = ordo::test::make_temp_dir("poison-bin");
  for (const auto& e : fs::directory_iterator(src)) fs::copy_file(e.path(), dir / e.path().filename());
  std::string name;
  int64_t offset = -1;
  {
    const ordo::Weights w = ordo::Weights::open_dir(dir);
    for (const std::string& n : w.names())
      if (n.find("h.1.mlp.c_fc.weight") != std::string::npos) name = n;
    ASSERT_FALSE(name.empty());
    const Tensor& t = w.get(name);
    ASSERT_EQ(t.dtype, ordo::DType::F32);
    ASSERT_EQ(w.mapped_files().size(), 1u);
    offset = static_cast<const unsigned char*>(t.data) - w.mapped_files()[0].begin + 4 * 70;
  }
  {
    std::fstream f(dir + "/pytorch_model.bin", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(offset);
    f.write(reinterpret_cast<const char*>(&kNaN), 4);
    ASSERT_TRUE(f.good());
  }
  ordo::ModelOptions o;
  o.load_tokenizer = false;
  const std::string e = load_error(dir, o);
  EXPECT_TRUE(has(e, dir + "/pytorch_model.bin: tensor '" + name + "' holds NaN at [0, 70]")) << e;
  fs::remove_all(dir);
}

// Weights the family splits (GPT-2's fused c_attn: checked before loading goes on) and the tied
// head (the embedding, checked as packing reads it) are named like any other; quantize refuses too.
TEST(Poison, SplitTiedAndQuantizedWeightsNamed) {
  for (const std::string name : {"transformer.h.0.attn.c_attn.weight", "transformer.wte.weight"}) {
    const std::string dir = poisoned_copy(ordo::test::model_dir("gpt2"), name, 300, kNaN);
    ordo::ModelOptions o;
    o.load_tokenizer = false;
    const std::string e = load_error(dir, o);
    EXPECT_TRUE(has(e, "tensor '" + name + "' holds NaN at ")) << e;
    const std::string out = ordo::test::make_temp_dir("poison-q8") + "/q";
    auto r = run_cli("quantize -m " + shell_quote(dir) + " --dtype int8 -o " + shell_quote(out));
    EXPECT_NE(r.exit_code, 0);
    EXPECT_TRUE(has(r.err, "tensor '" + name + "' holds NaN at ")) << r.err;
    EXPECT_FALSE(fs::exists(out + "/model.safetensors"));
    fs::remove_all(fs::path(out).parent_path());
    fs::remove_all(dir);
  }
}
