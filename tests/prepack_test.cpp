// Prepacked F32 weights (prepack_linear / prepack_weights / ModelOptions::prepack): oneDNN's
// blocked layout must give the plain weight's results, on raw linears against a double-precision
// reference and on the fixtures against Hugging Face, and switching to OpenBLAS must keep working.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "ordo/ordo.hpp"
#include "ordo/quantize.hpp"
#include "ordo/synthetic.hpp"
#include "support/cli.hpp"
#include "support/golden.hpp"

namespace {

using ordo::Backend;
using ordo::DType;
using ordo::Linear;
using ordo::Tensor;

std::vector<float> random_vec(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

Linear random_linear(int64_t N, int64_t K, bool bias, uint32_t seed) {
  Linear l;
  l.weight = Tensor::from({N, K}, random_vec(size_t(N * K), seed));
  if (bias) l.bias = Tensor::from({N}, random_vec(size_t(N), seed + 1));
  return l;
}

TEST(Prepack, LinearMatchesDoubleReferenceAndPlainWeight) {
  int packed_any = 0;
  for (auto [N, K] : std::vector<std::pair<int64_t, int64_t>>{{768, 768}, {2048, 768}, {100, 37}, {64, 64}, {33, 300}}) {
    for (bool bias : {false, true}) {
      Linear plain = random_linear(N, K, bias, uint32_t(N * 7 + K));
      Linear packed = plain;
      const bool did = ordo::prepack_linear(packed);
      packed_any += did;
      EXPECT_EQ(did, packed.packed != nullptr);
      EXPECT_EQ(plain.packed, nullptr);
      for (int64_t M : {2, 17, 64, 129}) {
        SCOPED_TRACE("N=" + std::to_string(N) + " K=" + std::to_string(K) + " M=" + std::to_string(M) +
                     (bias ? " bias" : ""));
        const std::vector<float> x = random_vec(size_t(M * K), uint32_t(M + K));
        std::vector<float> y0(size_t(M * N)), y1(size_t(M * N));
        ordo::linear(Backend::OneDNN, x.data(), M, K, plain, y0.data());
        ordo::linear(Backend::OneDNN, x.data(), M, K, packed, y1.data());
        double worst = 0, worst_plain = 0;
        for (int64_t m = 0; m < M; ++m)
          for (int64_t n = 0; n < N; ++n) {
            double ref = bias ? plain.bias.f32()[n] : 0.0, mag = std::fabs(ref);
            for (int64_t k = 0; k < K; ++k) {
              ref += double(x[size_t(m * K + k)]) * plain.weight.f32()[n * K + k];
              mag += std::fabs(double(x[size_t(m * K + k)]) * plain.weight.f32()[n * K + k]);
            }
            worst = std::max(worst, std::fabs(y1[size_t(m * N + n)] - ref) / (mag + 1e-30));
            worst_plain = std::max(worst_plain, double(std::fabs(y1[size_t(m * N + n)] - y0[size_t(m * N + n)])) / (mag + 1e-30));
          }
        EXPECT_LT(worst, 1e-5);        // F32 accumulation error, relative to Σ|x·w|
        EXPECT_LT(worst_plain, 1e-5);  // and the plain weight's answer
      }
    }
  }
  // oneDNN picks a blocked layout wherever it runs its brgemm kernels (AVX-512 and up).
  if (ordo::onednn_isa().rfind("avx512", 0) == 0) {
    EXPECT_GT(packed_any, 0);
  }
}

TEST(Prepack, LeavesOtherDtypesAlone) {
  for (DType dt : {DType::F16, DType::BF16, DType::I8}) {
    Linear l = ordo::convert_linear(random_linear(64, 32, false, 5), dt);
    EXPECT_FALSE(ordo::prepack_linear(l)) << ordo::weight_dtype_name(dt);
    EXPECT_EQ(l.packed, nullptr);
  }
  // Converting a packed weight drops the pack with the old data.
  Linear f = random_linear(64, 32, false, 6);
  ordo::prepack_linear(f);
  EXPECT_EQ(ordo::convert_linear(f, DType::F16).packed, nullptr);
}

TEST(Prepack, SharedWeightsShareOnePack) {
  ordo::ModelSpec s = ordo::synthetic_llama(ordo::parse_synthetic_shape("64,2,4,2,96,256"), DType::F32, 3);
  s.decoder.layers[1].ffn.up = s.decoder.layers[0].ffn.up;  // one weight used twice
  const int64_t bytes = ordo::prepack_weights(s);
  if (!s.decoder.layers[0].ffn.up.packed) {
    // oneDNN without AVX-512 (the CPU, or ONEDNN_MAX_CPU_ISA) prefers the plain layout: nothing
    // is packed or counted.
    EXPECT_EQ(ordo::onednn_isa().rfind("avx512", 0), std::string::npos) << ordo::onednn_isa();
    EXPECT_EQ(bytes, 0);
    EXPECT_EQ(s.lm_head.packed, nullptr);
    return;
  }
  EXPECT_EQ(s.decoder.layers[0].ffn.up.packed, s.decoder.layers[1].ffn.up.packed);
  // Every linear packed once: 2 layers x (q, k, v, o, gate, down) + one shared up + the lm_head.
  int64_t expect = s.lm_head.weight.nbytes() + s.decoder.layers[0].ffn.up.weight.nbytes();
  for (const ordo::Layer& l : s.decoder.layers)
    for (const Linear* p : {&l.self_attn.q, &l.self_attn.k, &l.self_attn.v, &l.self_attn.out, &l.ffn.gate, &l.ffn.down})
      expect += static_cast<int64_t>(p->weight.nbytes());
  EXPECT_EQ(bytes, expect);
}

class PrepackFixture : public testing::TestWithParam<const char*> {};

// The whole forward with prepacked weights still matches the reference at the fixtures' usual
// tolerance, on oneDNN and after switching the same model to OpenBLAS.
TEST_P(PrepackFixture, LogitsMatchReference) {
  const std::string fixture = GetParam();
  const ordo::test::Golden g = ordo::test::Golden::load(fixture);
  const nlohmann::json& c = g.json.at("cases").at(0);
  ordo::ModelOptions o;
  o.load_tokenizer = false;
  o.prepack = true;
  ordo::Model m = ordo::Model::load(ordo::test::model_dir(fixture), o);
  const Tensor& ref = g.tensor(c.at("name").get<std::string>() + ".logits");
  const std::vector<int32_t> ids = ordo::test::ids_of(c.at("input_ids"));
  for (Backend be : {Backend::OneDNN, Backend::OpenBLAS}) {
    SCOPED_TRACE(ordo::backend_name(be));
    m.engine().set_backend(be);
    const Tensor logits = c.contains("decoder_input_ids")
                              ? m.forward_seq2seq(ids, ordo::test::ids_of(c.at("decoder_input_ids"))).logits
                              : m.forward(ids).logits;
    EXPECT_TRUE(ordo::test::within_tolerance(logits.f32(), ref));
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, PrepackFixture, testing::Values("llama", "stories260K", "gpt2", "opt", "t5"));

TEST(Prepack, CliGreedyIdsMatchReference) {
  ordo::test::expect_greedy_reference_ids("--prepack");
}

TEST(Prepack, CliRejectsItForOpenBlas) {
  auto r = ordo::test::run_cli("run -p x -n 2 --prepack --backend openblas");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--prepack"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("openblas"), std::string::npos) << r.err;
}

}  // namespace
