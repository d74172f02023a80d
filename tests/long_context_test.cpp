// Long-context behaviour: the documented KV-cache policies for length-dependent RoPE scaling,
// and perplexity (the evaluator and `ordo ppl`) against ordo's own forward pass.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "ordo/ordo.hpp"
#include "ordo/perplexity.hpp"
#include "support/cli.hpp"
#include "support/golden.hpp"

using namespace ordo;
using ordo::test::ids_of;

namespace {

Model load_fixture(const std::string& name, Backend b = Backend::OneDNN) {
  ModelOptions o;
  o.backend = b;
  o.load_tokenizer = false;
  return Model::load(ordo::test::model_dir(name), o);
}

using ordo::test::read_file;

}  // namespace

// Policy (README, "Long context"): by default keys in the cache keep the rotation they were stored
// with (Hugging Face's cached behaviour, the fixture's output_ids). With dynamic_rerotate the cache
// is re-encoded whenever the dynamic base changes, which equals recomputing the whole sequence
// (the fixture's use_cache_false_output_ids).
TEST(LongContext, DynamicNtkRerotatePolicyMatchesRecomputedReference) {
  auto g = ordo::test::Golden::load("llama-dynamic");
  const auto& greedy = g.case_json("seq56").at("greedy");
  Model m = load_fixture("llama-dynamic");
  PositionConfig pc = m.spec().position;
  ASSERT_EQ(pc.scaling.type, ScalingType::Dynamic);
  GenerateParams p;
  p.max_new_tokens = greedy.at("max_new_tokens");
  p.stop_ids = {-1};
  EXPECT_EQ(m.generate_ids(ids_of(greedy.at("input_ids")), p).ids, ids_of(greedy.at("output_ids")));
  pc.scaling.dynamic_rerotate = true;
  m.engine().set_position(pc);
  EXPECT_EQ(m.generate_ids(ids_of(greedy.at("input_ids")), p).ids, ids_of(greedy.at("use_cache_false_output_ids")));
}

// Policy: LongRoPE uses short factors while the sequence is within the original length and long
// factors beyond it; when a cached generation crosses the boundary, every cached key is re-encoded
// with the long factors. So each cached step equals a full recompute of the same tokens.
TEST(LongContext, LongRopeCacheStaysConsistentAcrossTheSwitch) {
  auto g = ordo::test::Golden::load("llama-longrope");
  const std::vector<int32_t> seq48 = ids_of(g.case_json("seq48").at("input_ids"));
  const std::vector<int32_t> prompt(seq48.begin(), seq48.begin() + 26);  // 26 + 12 crosses 32
  Model m = load_fixture("llama-longrope");
  ASSERT_EQ(m.spec().position.scaling.original_max_positions, 32);
  ASSERT_TRUE(m.engine().decoder_scheme().rotation_changes(32, 33));
  GenerateParams p;
  p.max_new_tokens = 12;
  p.stop_ids = {-1};
  GenerateResult cached = m.generate_ids(prompt, p, nullptr, true);
  ASSERT_EQ(cached.ids.size(), 12u);
  std::vector<int32_t> seq = prompt;
  for (size_t k = 0; k < cached.ids.size(); ++k) {
    ForwardOutput full = m.forward(seq);  // the whole sequence, factors chosen by its length
    const int64_t V = m.spec().vocab_size;
    const float* last = full.logits.f32() + (full.logits.dim(0) - 1) * V;
    Tensor ref = Tensor::from({V}, std::vector<float>(last, last + V));
    EXPECT_TRUE(ordo::test::within_tolerance(cached.step_logits[k].f32(), ref))
        << "step " << k << " length " << seq.size();
    seq.push_back(cached.ids[k]);
  }
}

TEST(Perplexity, HandComputedTinyCase) {
  // Uniform logits over V tokens give perplexity exactly V, whatever the window plan.
  const std::vector<float> row(7, 0.25f);
  EXPECT_NEAR(token_nll(row.data(), 7, 3), std::log(7.0), 1e-12);
  const std::vector<float> peaked = {0.0f, std::log(3.0f), 0.0f};  // p = 1/5, 3/5, 1/5
  EXPECT_NEAR(token_nll(peaked.data(), 3, 1), -std::log(0.6), 1e-6);
  EXPECT_NEAR(token_nll(peaked.data(), 3, 0), -std::log(0.2), 1e-6);
  PerplexityResult r;
  r.tokens = 4;
  r.nll_sum = 4 * std::log(2.5);
  EXPECT_NEAR(r.ppl(), 2.5, 1e-12);
}

// The evaluator equals summing log-probabilities from ordo's own full forward, window by window.
TEST(Perplexity, MatchesOwnForwardOverTheSameWindows) {
  Model m = Model::load(ordo::test::model_dir("stories260K"));
  const std::vector<int32_t> ids = m.encode(read_file(ordo::test::data_path("text/stories-sampled.txt")), false);
  ASSERT_GT(ids.size(), 1000u);
  const int64_t V = m.spec().vocab_size;
  auto reference = [&](int64_t ctx, int64_t stride) {
    double nll = 0;
    int64_t n = 0, scored_until = 1;
    const int64_t N = static_cast<int64_t>(ids.size());
    for (int64_t b = 0; b + (stride ? 1 : ctx) <= N; b += stride ? stride : ctx) {
      const int64_t e = std::min(b + ctx, N);
      if (!stride && e - b < ctx) break;
      ForwardOutput o = m.forward(std::vector<int32_t>(ids.begin() + b, ids.begin() + e));
      const int64_t from = stride ? std::max(scored_until, b + 1) : b + 1;
      for (int64_t t = from; t < e; ++t) {
        nll += token_nll(o.logits.f32() + (t - 1 - b) * V, V, ids[t]);
        ++n;
      }
      scored_until = std::max(scored_until, e);
      if (stride && e == N) break;
    }
    return std::make_pair(nll, n);
  };
  for (const auto& [ctx, stride] : std::vector<std::pair<int64_t, int64_t>>{{128, 0}, {256, 0}, {256, 64}}) {
    SCOPED_TRACE("ctx " + std::to_string(ctx) + " stride " + std::to_string(stride));
    PerplexityResult r = perplexity(m.engine(), ids, ctx, stride);
    auto [nll, n] = reference(ctx, stride);
    EXPECT_EQ(r.tokens, n);
    EXPECT_NEAR(r.nll_sum, nll, 1e-6 * std::fabs(nll));
    if (stride) {
      EXPECT_EQ(r.tokens, static_cast<int64_t>(ids.size()) - 1);  // every token but the first, once
    }
  }
}

TEST(Perplexity, CliWritesTableJsonAndPlotThatAgree) {
  const std::string dir = ordo::test::make_temp_dir("ppl");
  const std::string text = ordo::test::data_path("text/stories-sampled.txt");
  auto r = ordo::test::run_cli("ppl --text " + text + " --ctx 128,256 --scaling model,linear:2 --json " + dir +
                               "/p.json --plot " + dir + "/p.svg");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json doc = nlohmann::json::parse(read_file(dir + "/p.json"));
  ASSERT_EQ(doc.at("results").size(), 4u);
  Model m = Model::load(ordo::test::model_dir("stories260K"));
  const std::vector<int32_t> ids = m.encode(read_file(text), false);
  for (const auto& row : doc.at("results")) {
    const int64_t ctx = row.at("ctx");
    PositionConfig pc = m.spec().position;
    pc.scaling = {};
    if (row.at("scaling") == "linear:2") {
      pc.scaling.type = ScalingType::Linear;
      pc.scaling.factor = 2;
    }
    m.engine().set_position(pc);
    PerplexityResult ref = perplexity(m.engine(), ids, ctx);
    EXPECT_EQ(row.at("tokens").get<int64_t>(), ref.tokens);
    EXPECT_NEAR(row.at("ppl").get<double>(), ref.ppl(), 1e-9 * ref.ppl()) << row.dump();
    EXPECT_NE(r.out.find(std::to_string(ref.ppl())), std::string::npos) << r.out;  // the table shows it too
  }
  const std::string svg = read_file(dir + "/p.svg");
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("linear:2"), std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(Perplexity, TextShorterThanContextIsAClearError) {
  Model m = Model::load(ordo::test::model_dir("stories260K"));
  try {
    perplexity(m.engine(), {1, 2, 3}, 8);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("3 tokens, fewer than the context length 8"), std::string::npos) << e.what();
  }
}

// Windows scored in batches (one forward step for several windows, prompts' rows shared) give the
// perplexity of scoring them one by one, up to float rounding.
TEST(Perplexity, BatchedWindowsEqualOneByOne) {
  const Model m = Model::load(ordo::test::model_dir("stories260K"));
  const std::string text = ordo::test::read_file(ordo::test::data_path("text/stories-sampled.txt"));
  ASSERT_FALSE(text.empty());
  const std::vector<int32_t> ids = m.encode(text, false);
  for (int64_t stride : {int64_t{0}, int64_t{48}}) {
    const PerplexityResult one = perplexity(m.engine(), ids, 64, stride);
    const PerplexityResult four = perplexity(m.engine(), ids, 64, stride, nullptr, 4);
    ASSERT_GT(one.windows, 4);
    EXPECT_EQ(four.windows, one.windows);
    EXPECT_EQ(four.tokens, one.tokens);
    EXPECT_NEAR(four.ppl(), one.ppl(), 1e-5 * one.ppl()) << "stride " << stride;
  }
  EXPECT_THROW(perplexity(m.engine(), ids, 64, 0, nullptr, 0), Error);
}

// Parts of a run (ordo sweep's shards): windows [first, last) at multiples of the batch score as the
// whole run does, and their NLLs summed in order give its nll_sum exactly.
TEST(Perplexity, PartsAtBatchBoundariesSumToTheWholeRunExactly) {
  const Model m = Model::load(ordo::test::model_dir("stories260K"));
  const std::vector<int32_t> ids =
      m.encode(ordo::test::read_file(ordo::test::data_path("text/stories-sampled.txt")), false);
  for (int64_t stride : {int64_t{0}, int64_t{48}}) {
    const PerplexityResult whole = perplexity(m.engine(), ids, 64, stride, nullptr, 4);
    const int64_t W = perplexity_windows(static_cast<int64_t>(ids.size()), 64, stride);
    ASSERT_EQ(W, whole.windows);
    std::vector<double> nlls;
    int64_t windows = 0;
    for (int64_t first = 0; first < W; first += 8) {  // parts of two groups of 4 windows
      PerplexityPart part;
      part.first = first, part.last = std::min(W, first + 8), part.nlls = &nlls;
      windows += perplexity(m.engine(), ids, 64, stride, nullptr, 4, part).windows;
    }
    PerplexityResult joined;
    for (double x : nlls) joined.nll_sum += x, ++joined.tokens;
    EXPECT_EQ(windows, whole.windows);
    EXPECT_EQ(joined.tokens, whole.tokens);
    EXPECT_EQ(joined.nll_sum, whole.nll_sum) << "stride " << stride;  // bit for bit
  }
  PerplexityPart past;
  past.first = 0, past.last = 1 << 20;
  EXPECT_THROW(perplexity(m.engine(), ids, 64, 0, nullptr, 4, past), Error);
  EXPECT_EQ(perplexity_windows(10, 64, 0), 0);
}
