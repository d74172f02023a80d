// The F16 KV cache (ModelOptions::kv_dtype, Transformer::set_kv_dtype) against the Hugging Face
// reference: logits stay within F16 rounding of the reference logits on every position scheme's
// fixture, the prompt (GEMM) and step-by-step (row kernel) paths read the same rounded keys, and a
// cache that grows keeps its contents. The F32 cache is the default and is what every other
// fixture test runs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "ordo/ordo.hpp"
#include "support/cli.hpp"
#include "support/golden.hpp"

namespace {

using ordo::DType;
using ordo::Model;
using ordo::Tensor;

Model load(const std::string& fixture, DType kv, ordo::Backend be = ordo::Backend::OneDNN) {
  ordo::ModelOptions o;
  o.load_tokenizer = false;
  o.backend = be;
  o.kv_dtype = kv;
  return Model::load(ordo::test::model_dir(fixture), o);
}

double max_abs_diff(const float* a, const float* b, int64_t n) {
  double d = 0;
  for (int64_t i = 0; i < n; ++i) d = std::max(d, double(std::fabs(a[i] - b[i])));
  return d;
}

double max_abs(const float* a, int64_t n) { return max_abs_diff(a, std::vector<float>(n, 0.0f).data(), n); }

// Keys and values keep 11 significant bits (relative rounding <= 2^-11 ≈ 4.9e-4 each); through
// softmax and the layers the logits move by about that much relative to their scale. The bound
// allows 10x (observed values are printed).
constexpr double kF16Rel = 5e-3;

class KvCacheF16 : public testing::TestWithParam<const char*> {};

// Logits of the fixture's first case with the model's KV cache in `kv`.
Tensor case_logits(const Model& m, const nlohmann::json& c) {
  const std::vector<int32_t> ids = ordo::test::ids_of(c.at("input_ids"));
  if (c.contains("decoder_input_ids"))
    return m.forward_seq2seq(ids, ordo::test::ids_of(c.at("decoder_input_ids"))).logits;
  return m.forward(ids).logits;
}

TEST_P(KvCacheF16, LogitsStayWithinF16RoundingOfReference) {
  const std::string fixture = GetParam();
  const ordo::test::Golden g = ordo::test::Golden::load(fixture);
  const nlohmann::json& c = g.json.at("cases").at(0);
  const Tensor& ref = g.tensor(c.at("name").get<std::string>() + ".logits");
  const double scale = std::max(1.0, max_abs(ref.f32(), ref.numel()));
  for (ordo::Backend be : {ordo::Backend::OneDNN, ordo::Backend::OpenBLAS}) {
    SCOPED_TRACE(ordo::backend_name(be));
    Model m = load(fixture, DType::F16, be);
    ASSERT_EQ(m.engine().kv_dtype(), DType::F16);
    const Tensor logits = case_logits(m, c);
    const Tensor exact = case_logits(load(fixture, DType::F32, be), c);
    const double d = max_abs_diff(logits.f32(), ref.f32(), ref.numel());
    std::printf("[kv f16] %-12s %-8s max|logit - reference| %.3g (max|logit| %.3g)\n", fixture.c_str(),
                ordo::backend_name(be), d, scale);
    EXPECT_TRUE(ordo::test::within_tolerance(logits.f32(), ref, {}, kF16Rel));
    // The keys and values really were rounded: the F16 cache is not silently F32.
    EXPECT_GT(max_abs_diff(logits.f32(), exact.f32(), ref.numel()), 0.0);
  }
}

// The prompt path multiplies by the cache's keys through GEMMs (widened per block), decoding one
// token runs the row kernels on the F16 rows directly; both read the same rounded keys. They still
// differ by more than with an F32 cache: the two paths' F32 summation-order noise (~1e-6) can tip
// a key or value across an F16 rounding boundary in a later layer, a step of 2^-11 relative. So
// the bound is a few such steps (stories260K, 5 layers: 2.5e-4), 5x inside the reference bound.
TEST_P(KvCacheF16, DecodeStepsMatchPrompt) {
  const std::string fixture = GetParam();
  const ordo::test::Golden g = ordo::test::Golden::load(fixture);
  const nlohmann::json& c = g.json.at("cases").at(0);
  Model m = load(fixture, DType::F16);
  const ordo::Transformer& e = m.engine();
  const Tensor full = case_logits(m, c);
  const bool seq2seq = c.contains("decoder_input_ids");
  const std::vector<int32_t> ids = ordo::test::ids_of(c.at(seq2seq ? "decoder_input_ids" : "input_ids"));
  ordo::Sequence seq = e.new_sequence(static_cast<int64_t>(ids.size()));
  if (seq2seq) e.attach_encoder(seq, e.encode(ordo::test::ids_of(c.at("input_ids")), {}, {}), {});
  const int64_t V = m.spec().vocab_size;
  double diff = 0, scale = 1;
  for (size_t t = 0; t < ids.size(); ++t) {
    const Tensor step = e.decode(seq, {ids[t]}).logits;
    diff = std::max(diff, max_abs_diff(step.f32(), full.f32() + t * V, V));
    scale = std::max(scale, max_abs(full.f32() + t * V, V));
  }
  std::printf("[kv f16] %-12s decode steps vs prompt: max|diff| %.3g (max|logit| %.3g)\n", fixture.c_str(), diff, scale);
  EXPECT_LE(diff, 1e-3 * scale);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, KvCacheF16,
                         testing::Values("llama", "stories260K", "gpt2", "gptj", "mpt", "opt", "t5", "marian"));

TEST(KvCache, F16HalvesTheCacheAndGrowsKeepingContents) {
  Model m = load("llama", DType::F16);
  const ordo::Transformer& e = m.engine();
  const std::vector<int32_t> ids = ordo::test::ids_of(ordo::test::Golden::load("llama").json.at("cases").at(0).at("input_ids"));
  const int64_t n = static_cast<int64_t>(ids.size());
  ordo::Sequence big = e.new_sequence(n);
  ASSERT_EQ(big.self.k.at(0).dtype, DType::F16);
  EXPECT_EQ(big.self.k.at(0).nbytes(), static_cast<size_t>(e.spec().n_kv_heads * n * e.spec().head_dim * 2));
  // Capacity 2: the cache is reallocated (and its F16 rows copied) several times on the way.
  ordo::Sequence small = e.new_sequence(2);
  e.decode(big, std::vector<int32_t>(ids.begin(), ids.begin() + 3));
  e.decode(small, std::vector<int32_t>(ids.begin(), ids.begin() + 3));
  for (int64_t t = 3; t < n; ++t) {
    const Tensor a = e.decode(big, {ids[t]}).logits, b = e.decode(small, {ids[t]}).logits;
    ASSERT_EQ(max_abs_diff(a.f32(), b.f32(), a.numel()), 0.0) << "step " << t;
  }
  EXPECT_GE(small.self.capacity, n);
  EXPECT_EQ(small.self.k.at(0).dtype, DType::F16);
}

TEST(KvCache, RejectsOtherDtypes) {
  Model m = load("llama", DType::F32);
  try {
    m.engine().set_kv_dtype(DType::BF16);
    FAIL() << "bf16 accepted";
  } catch (const ordo::Error& err) {
    EXPECT_NE(std::string(err.what()).find("bf16"), std::string::npos) << err.what();
  }
  EXPECT_THROW(m.engine().set_kv_dtype(DType::I8), ordo::Error);
  EXPECT_EQ(m.engine().kv_dtype(), DType::F32);
  auto r = ordo::test::run_cli("run -p x -n 2 --kv-dtype q4");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("q4"), std::string::npos) << r.err;
}

// The bundled model's greedy continuation with an F16 cache is still the reference's.
TEST(KvCache, CliF16GreedyIdsMatchReference) {
  std::string expect;
  auto r = ordo::test::run_greedy_reference_case("--kv-dtype f16", expect);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(expect + "\n"), std::string::npos) << r.out;
}

}  // namespace
