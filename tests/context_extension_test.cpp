// Context extension (PositionConfig::extension): Self-Extend and attention sinks on every position
// scheme of the zoo (models/zoo/lm: seed 1 of the trained decoder of each scheme). Decoding token by token with the
// KV cache (sinks: evicting as it goes) must equal recomputing the whole sequence in one forward
// under the same position assignment; the settings that are the identity must change nothing;
// the settings that are not meaningful must be refused with an Error naming them.
// The golden logits of the independent PyTorch reference are held in context_extension_golden_test.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "ordo/ordo.hpp"
#include "ordo/quantize.hpp"
#include "support/cli.hpp"
#include "support/golden.hpp"

using namespace ordo;
using ordo::test::error_of;
using ordo::test::within_tolerance;

namespace {

std::string zoo_dir(const std::string& scheme) {
  return std::string(ORDO_SOURCE_DIR) + "/models/zoo/lm/" + scheme + "-s1";
}

Model load_zoo(const std::string& scheme, const ContextExtension& e, DType kv = DType::F32) {
  ModelOptions o;
  o.load_tokenizer = false;
  o.extension = e;
  o.kv_dtype = kv;
  return Model::load(zoo_dir(scheme), o);
}

// 2.5x the zoo's trained length (128): the zoo's held-out golden ids, repeated.
std::vector<int32_t> long_ids(int64_t n = 320) {
  const ordo::test::Golden g{"zoo-rope", nlohmann::json::parse(ordo::test::read_file(zoo_dir("rope") + "/golden.json")),
                             SafeTensors::open(zoo_dir("rope") + "/golden.safetensors")};
  const std::vector<int32_t> base = ordo::test::ids_of(g.json.at("cases").at(0).at("input_ids"));
  std::vector<int32_t> ids;
  while (static_cast<int64_t>(ids.size()) < n) ids.push_back(base[ids.size() % base.size()]);
  return ids;
}

ContextExtension self_extend(int64_t G, int64_t W) {
  ContextExtension e;
  e.group = G;
  e.neighbor = W;
  return e;
}

ContextExtension sinks(int64_t K, int64_t N) {
  ContextExtension e;
  e.sinks = K;
  e.window = N;
  return e;
}

// Logits of every position: the whole sequence in one forward (recompute).
Tensor recompute(const Model& m, const std::vector<int32_t>& ids) {
  Sequence s = m.engine().new_sequence(static_cast<int64_t>(ids.size()));
  return m.engine().decode(s, ids, {}, LogitsFor::All).logits;
}

// Logits of every position after the first `prompt`: a prompt, then one token per step with the
// KV cache. Under sinks the cache never holds more than K + N keys.
std::vector<Tensor> decode_steps(const Model& m, const std::vector<int32_t>& ids, size_t prompt) {
  const ContextExtension& e = m.engine().context_extension();
  Sequence s = m.engine().new_sequence(e.streaming() ? e.sinks + e.window : static_cast<int64_t>(ids.size()));
  std::vector<Tensor> rows;
  m.engine().decode(s, std::vector<int32_t>(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(prompt)), {},
                    LogitsFor::Last);
  for (size_t t = prompt; t < ids.size(); ++t) {
    rows.push_back(m.engine().decode(s, {ids[t]}, {}, LogitsFor::Last).logits);
    if (e.streaming()) {
      EXPECT_LE(s.self.length, e.sinks + e.window) << "step " << t;
      EXPECT_LE(s.self.capacity, e.sinks + e.window) << "step " << t;
    }
  }
  return rows;
}

// Row t of a [T, V] tensor as a [1, V] tensor.
Tensor row_of(const Tensor& t, int64_t r) {
  const int64_t V = t.dim(1);
  return Tensor::from({1, V}, std::vector<float>(t.f32() + r * V, t.f32() + (r + 1) * V));
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  double d = 0;
  for (int64_t i = 0; i < a.numel(); ++i) d = std::max(d, double(std::fabs(a.f32()[i] - b.f32()[i])));
  return d;
}

std::string join_ids(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) s += (s.empty() ? "" : ",") + std::to_string(id);
  return s;
}

struct Case {
  std::string scheme;
  std::string method;  // "self-extend" | "sinks"
};

std::string case_name(const testing::TestParamInfo<Case>& p) {
  std::string m = p.param.method == "sinks" ? "Sinks" : "SelfExtend";
  return p.param.scheme + "_" + m;
}

class DecodeEqualsRecompute : public testing::TestWithParam<Case> {};

// G=4, W=32 reach 32 + 4·96 = 416 > 320 tokens; K=4, N=60 evict from token 64 on.
TEST_P(DecodeEqualsRecompute, EveryStep) {
  const Case& c = GetParam();
  const ContextExtension e = c.method == "sinks" ? sinks(4, 60) : self_extend(4, 32);
  if (c.method == "self-extend" && (c.scheme == "learned" || c.scheme == "sinusoidal")) {
    const std::string msg = error_of([&] { load_zoo(c.scheme, e); });
    EXPECT_NE(msg.find("self-extend (--self-extend) does not apply to the " + c.scheme + " scheme"), std::string::npos)
        << msg;
    return;
  }
  const Model m = load_zoo(c.scheme, e);
  const std::vector<int32_t> ids = long_ids();
  const Tensor full = recompute(m, ids);
  const size_t prompt = 20;
  const std::vector<Tensor> steps = decode_steps(m, ids, prompt);
  for (size_t k = 0; k < steps.size(); ++k)
    ASSERT_TRUE(within_tolerance(steps[k].f32(), row_of(full, static_cast<int64_t>(prompt + k))))
        << c.scheme << " " << e.describe() << " position " << prompt + k;

  // The setting is in force: beyond W (or K + N) the logits leave the plain model's, except that
  // Self-Extend has nothing to change without positions (none). (The plain learned model cannot
  // run past its 128-row table.)
  const int64_t T = c.scheme == "learned" ? 128 : static_cast<int64_t>(ids.size());
  const Tensor base =
      recompute(load_zoo(c.scheme, ContextExtension{}), std::vector<int32_t>(ids.begin(), ids.begin() + T));
  const double moved = max_abs_diff(row_of(full, T - 1), row_of(base, T - 1));
  if (c.scheme == "none" && c.method == "self-extend")
    EXPECT_TRUE(within_tolerance(row_of(full, T - 1).f32(), row_of(base, T - 1)));
  else
    EXPECT_GT(moved, 1e-4) << "the extension changed nothing at position " << T - 1;
  // Before the first far key (Self-Extend: distance W; sinks: position K + N) nothing changes.
  const int64_t early = c.method == "sinks" ? 63 : 31;
  EXPECT_TRUE(within_tolerance(row_of(full, early).f32(), row_of(base, early)));
}

INSTANTIATE_TEST_SUITE_P(Zoo, DecodeEqualsRecompute,
                         testing::Values(Case{"none", "self-extend"}, Case{"none", "sinks"},
                                         Case{"learned", "self-extend"}, Case{"learned", "sinks"},
                                         Case{"sinusoidal", "self-extend"}, Case{"sinusoidal", "sinks"},
                                         Case{"relative", "self-extend"}, Case{"relative", "sinks"},
                                         Case{"rope", "self-extend"}, Case{"rope", "sinks"},
                                         Case{"alibi", "self-extend"}, Case{"alibi", "sinks"}),
                         case_name);

// Self-Extend with G = 1 groups nothing: grouped positions are the exact ones (shift W − W = 0).
TEST(ContextExtension, SelfExtendWithGroupOneIsTheIdentity) {
  const std::vector<int32_t> ids = long_ids(200);
  for (const char* scheme : {"rope", "alibi", "relative"}) {
    SCOPED_TRACE(scheme);
    const Tensor a = recompute(load_zoo(scheme, self_extend(1, 16)), ids);
    const Tensor b = recompute(load_zoo(scheme, ContextExtension{}), ids);
    EXPECT_TRUE(within_tolerance(a.f32(), b));
  }
}

// Prompts of several tokens in the middle of a sinks run (the prompt path with eviction) and the
// one-token path agree, and a batch of sequences decodes as each alone.
TEST(ContextExtension, SinksPromptChunksAndBatchesAgreeWithOneForward) {
  const Model m = load_zoo("rope", sinks(4, 40));
  const std::vector<int32_t> ids = long_ids(200);
  const Tensor full = recompute(m, ids);
  Sequence s = m.engine().new_sequence(44);
  for (size_t t0 = 0; t0 < ids.size(); t0 += 23) {
    const size_t t1 = std::min(ids.size(), t0 + 23);
    const Tensor got = m.engine()
                           .decode(s,
                                   std::vector<int32_t>(ids.begin() + static_cast<std::ptrdiff_t>(t0),
                                                        ids.begin() + static_cast<std::ptrdiff_t>(t1)),
                                   {}, LogitsFor::All)
                           .logits;
    for (size_t t = t0; t < t1; ++t)
      ASSERT_TRUE(
          within_tolerance(row_of(got, static_cast<int64_t>(t - t0)).f32(), row_of(full, static_cast<int64_t>(t))))
          << "position " << t;
  }
  EXPECT_LE(s.self.length, 4 + 40 + 22);

  GenerateParams p;
  p.max_new_tokens = 150;
  p.stop_ids = {-1};
  const std::vector<int32_t> a(ids.begin(), ids.begin() + 10), b(ids.begin() + 30, ids.begin() + 37);
  const std::vector<GenerateResult> both =
      generate_batch(m.engine(), {GenerateRequest{a, p, nullptr, {}}, GenerateRequest{b, p, nullptr, {}}}, 2);
  EXPECT_EQ(both[0].ids, generate(m.engine(), a, p).ids);
  EXPECT_EQ(both[1].ids, generate(m.engine(), b, p).ids);
}

// Self-Extend's grouped keys are stored in the cache's dtype (with their own row scales for I8):
// F16 and I8 caches stay within the rounding bounds kv_cache_test holds them to (5e-3, 0.1 of
// the logit scale), on the prompt path and the one-token path.
TEST(ContextExtension, SelfExtendWithF16AndInt8CachesStaysNearF32) {
  const std::vector<int32_t> ids = long_ids(300);
  const std::vector<Tensor> f32 = decode_steps(load_zoo("rope", self_extend(4, 32)), ids, 250);
  for (const auto& [kv, bound] : {std::pair{DType::F16, 5e-3}, std::pair{DType::I8, 0.1}}) {
    const Model m = load_zoo("rope", self_extend(4, 32), kv);
    const std::vector<Tensor> got = decode_steps(m, ids, 250);
    for (size_t k = 0; k < f32.size(); ++k)
      EXPECT_TRUE(within_tolerance(got[k].f32(), f32[k], {}, bound)) << weight_dtype_name(kv) << " step " << k;
    const Tensor full = recompute(m, ids);  // prompt path: grouped keys widened from the cache
    EXPECT_TRUE(within_tolerance(row_of(full, 299).f32(), f32.back(), {}, bound)) << weight_dtype_name(kv);
  }
}

// `ordo run` with sinks generates past the context limit (only the K + N cache is held to it),
// the same ids as the API with the same settings; without sinks the limit stops it.
TEST(ContextExtension, RunWithSinksGeneratesPastTheContextLimit) {
  const std::string flags = "run --ids 1 -n 1000 --temp 0.8 --seed 3 --max-context 600 --print-ids -q";
  const auto r = ordo::test::run_cli(flags + " --sinks 4 --window 60");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ModelOptions o;
  o.context_limit = 600;
  o.extension = sinks(4, 60);
  const Model m = Model::load(ordo::test::model_dir("stories260K"), o);
  GenerateParams p;
  p.max_new_tokens = 1000;
  p.sampling.temperature = 0.8f;
  p.sampling.top_k = 40;
  p.sampling.top_p = 0.95f;
  p.sampling.seed = 3;
  const GenerateResult g = m.generate_ids({1}, p);
  ASSERT_EQ(g.ids.size(), 1000u);
  EXPECT_NE(r.out.find(join_ids(g.ids) + "\n"), std::string::npos);
  const auto plain = ordo::test::run_cli(flags);
  EXPECT_NE(plain.exit_code, 0);
  EXPECT_NE(plain.err.find("more than the context limit of 600"), std::string::npos) << plain.err;
}

TEST(ContextExtension, SettingsThatDoNotApplyAreRefusedByName) {
  auto message = [](const std::string& scheme, const ContextExtension& e, ScalingType s = ScalingType::None) {
    return error_of([&] {
      ModelOptions o;
      o.load_tokenizer = false;
      o.extension = e;
      if (s != ScalingType::None) {
        Scaling sc;
        sc.type = s;
        sc.factor = 2;
        o.scaling = sc;
      }
      Model::load(zoo_dir(scheme), o);
    });
  };
  EXPECT_NE(message("sinusoidal", self_extend(2, 8)).find("does not apply to the sinusoidal scheme"),
            std::string::npos);
  EXPECT_NE(message("rope", sinks(4, 8), ScalingType::Dynamic)
                .find("sinks (--sinks/--window) cannot be combined with dynamic"),
            std::string::npos);
  EXPECT_NE(message("rope", self_extend(2, 8), ScalingType::Dynamic)
                .find("self-extend (--self-extend) cannot be combined with dynamic scaling"),
            std::string::npos);
  ContextExtension both = self_extend(2, 8);
  both.window = 8;
  EXPECT_NE(message("rope", both).find("cannot be combined; choose one"), std::string::npos);
  EXPECT_NE(message("rope", self_extend(0, 8)).find("the group size G must be in [1, 1073741824], got 0"),
            std::string::npos);
  EXPECT_NE(message("rope", self_extend(4, -1)).find("the neighbour window W must be in"), std::string::npos);
  EXPECT_NE(message("rope", sinks(-1, 8)).find("the number of sink tokens K must be in [0,"), std::string::npos);
  EXPECT_NE(message("rope", sinks(4, 0)).find("the recent-token window N must be in [1,"), std::string::npos);
  ModelOptions o;
  o.load_tokenizer = false;
  o.extension = sinks(4, 8);
  EXPECT_NE(error_of([&] { Model::load(ordo::test::model_dir("bert"), o); }).find("has no decoder"), std::string::npos);

  // Padding under sinks, and a sequence made before Self-Extend was switched on.
  Model m = load_zoo("rope", sinks(4, 8));
  Sequence s = m.engine().new_sequence(16);
  EXPECT_NE(error_of([&] { m.engine().decode(s, {5, 6, 7}, {0, 1, 1}); }).find("padded input"), std::string::npos);
  Model g = load_zoo("rope", ContextExtension{});
  Sequence old = g.engine().new_sequence(16);
  PositionConfig pc = g.spec().position;
  pc.extension = self_extend(2, 4);
  g.engine().set_position(pc);
  EXPECT_NE(error_of([&] { g.engine().decode(old, {5, 6, 7}); }).find("start a new sequence"), std::string::npos);
  // ... and every other change of setting under a sequence: its cache holds keys for the old one.
  Sequence grouped = g.engine().new_sequence(16);
  g.engine().decode(grouped, {5, 6, 7});
  for (const ContextExtension& other : {sinks(2, 4), self_extend(4, 4), ContextExtension{}}) {
    pc.extension = other;
    g.engine().set_position(pc);
    EXPECT_NE(error_of([&] { g.engine().decode(grouped, {8}); })
                  .find("created with context extension 'self-extend G=2 W=4' and the model is now set to '" +
                        other.describe() + "'"),
              std::string::npos)
        << other.describe();
  }
}

// Once sinks have dropped tokens, the cache's slots are no longer a prefix of the text: truncating
// to a middle slot would give the next token a position below the cached ones.
TEST(ContextExtension, TruncatingAnEvictedSequenceIsRefused) {
  Model m = load_zoo("rope", sinks(2, 4));
  Sequence s = m.engine().new_sequence(8);
  m.engine().decode(s, {5, 6, 7, 8});
  EXPECT_FALSE(s.has_evicted());
  s.truncate(3);  // nothing dropped yet: an ordinary prefix
  EXPECT_EQ(s.next_position, 3);
  for (int32_t id : {9, 10, 11, 12}) m.engine().decode(s, {id});
  ASSERT_TRUE(s.has_evicted());
  ASSERT_LE(s.length(), 6);
  EXPECT_EQ(s.next_position, 7);
  EXPECT_NE(error_of([&] { s.truncate(3); }).find("attention sinks have dropped tokens"), std::string::npos);
  s.truncate(s.length());  // no change
  EXPECT_EQ(s.next_position, 7);
  s.truncate(0);
  EXPECT_EQ(s.next_position, 0);
  EXPECT_FALSE(s.has_evicted());
}

}  // namespace
