// Schemes that add positions to the input embeddings: learned tables (offset, interpolation) and
// sinusoidal layouts against their closed forms.

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "ordo/position.hpp"
#include "support/golden.hpp"
#include "support/position.hpp"

using namespace ordo;
using namespace ordo::test;
using json = nlohmann::json;

namespace {

PositionWeights learned_table(int64_t rows, int64_t d) {
  std::vector<float> v(static_cast<size_t>(rows * d));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < d; ++i) v[r * d + i] = static_cast<float>(10 * r + i);
  PositionWeights w;
  w.tensors["table"] = Tensor::from({rows, d}, v);
  return w;
}

}  // namespace

TEST(Learned, LooksUpWithOffset) {
  PositionConfig cfg;
  cfg.scheme = "learned";
  cfg.learned_offset = 2;
  auto s = make(cfg, ctx_of(3, 1, 3), learned_table(8, 3));
  std::vector<float> x(6, 1.0f);
  int32_t pos[] = {0, 5};
  s->embed(x.data(), pos, 2);
  EXPECT_EQ(x, (std::vector<float>{21, 22, 23, 71, 72, 73}));  // rows 2 and 7
  s->check_positions(5);
  EXPECT_THROW(s->check_positions(6), Error);
  int32_t too_far[] = {6};
  EXPECT_THROW(s->embed(x.data(), too_far, 1), Error);
}

TEST(Learned, TooLongSuggestsInterpolation) {
  PositionConfig cfg;
  cfg.scheme = "learned";
  cfg.learned_offset = 2;
  auto s = make(cfg, ctx_of(3, 1, 3), learned_table(66, 3));  // OPT-like: 64 positions
  s->check_positions(63);
  const std::string msg = error_of([&] { s->check_positions(79); });
  EXPECT_NE(msg.find("longer than"), std::string::npos) << msg;
  EXPECT_NE(msg.find("80"), std::string::npos) << msg;
  EXPECT_NE(msg.find("64"), std::string::npos) << msg;
  EXPECT_NE(msg.find("interpolat"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--scaling linear --factor 1.25"), std::string::npos) << msg;
  // Following the suggestion works.
  cfg.scaling.type = ScalingType::Linear;
  cfg.scaling.factor = 1.25;
  auto t = make(cfg, ctx_of(3, 1, 3), learned_table(66, 3));
  t->check_positions(79);
  EXPECT_THROW(t->check_positions(80), Error);
}

TEST(Learned, LinearInterpolationByHand) {
  // 3 real rows r_p = [10(p+2), 10(p+2)+1] after 2 offset rows; factor 2 -> 6 positions reading the
  // table at p/2: p0 r0, p1 (r0+r1)/2, p2 r1, p3 (r1+r2)/2, p4 r2, p5 r2 (past the end: last row).
  PositionConfig cfg;
  cfg.scheme = "learned";
  cfg.learned_offset = 2;
  cfg.scaling.type = ScalingType::Linear;
  cfg.scaling.factor = 2.0;
  auto s = make(cfg, ctx_of(2, 1, 2), learned_table(5, 2));
  std::vector<float> x(12, 0.0f);
  int32_t pos[] = {0, 1, 2, 3, 4, 5};
  s->embed(x.data(), pos, 6);
  EXPECT_EQ(x, (std::vector<float>{20, 21, 25, 26, 30, 31, 35, 36, 40, 41, 40, 41}));
  EXPECT_THROW(s->check_positions(6), Error);
}

TEST(Learned, MissingTableIsAnError) {
  PositionConfig cfg;
  cfg.scheme = "learned";
  EXPECT_NE(error_of([&] { make(cfg, ctx_of(3, 1, 3)); }).find("the model has no learned position table"),
            std::string::npos);
  EXPECT_THROW(make(cfg, ctx_of(4, 1, 4), learned_table(8, 3)), Error);  // d_model mismatch
  // A quantized table is named by its dtype (it used to say int8 for the block dtypes too).
  PositionWeights q;
  q.set("table", Tensor::zeros({4, 32}, DType::Q8_0));
  EXPECT_NE(error_of([&] {
              make(cfg, ctx_of(32, 1, 32), q);
            }).find(std::string(dtype_name(DType::Q8_0)) + " position weights are not supported"),
            std::string::npos);
}

// ---------------------------------------------------------------- sinusoidal

TEST(Sinusoidal, LayoutsMatchClosedForm) {
  // d 8: 10000^(2i/8) = 10^i.
  for (SinusoidalLayout layout : {SinusoidalLayout::Concat, SinusoidalLayout::Interleaved}) {
    PositionConfig cfg;
    cfg.scheme = "sinusoidal";
    cfg.sinusoidal_layout = layout;
    cfg.max_positions = 4;  // p = 5 is computed outside the table
    auto s = make(cfg, ctx_of(8, 2, 4));
    for (int32_t p : {0, 1, 5}) {
      std::vector<float> x(8, 0.0f);
      s->embed(x.data(), &p, 1);
      for (int i = 0; i < 4; ++i) {
        const double a = p / std::pow(10.0, i);
        const float sn = static_cast<float>(std::sin(a)), cs = static_cast<float>(std::cos(a));
        if (layout == SinusoidalLayout::Concat) {
          EXPECT_EQ(x[i], sn) << p << " " << i;
          EXPECT_EQ(x[4 + i], cs) << p << " " << i;
        } else {
          EXPECT_EQ(x[2 * i], sn) << p << " " << i;
          EXPECT_EQ(x[2 * i + 1], cs) << p << " " << i;
        }
      }
    }
  }
  // Known numbers: p = 1, concat: sin 1 = 0.84147098, cos 1 = 0.54030231 at dims 0 and 4.
  PositionConfig cfg;
  cfg.scheme = "sinusoidal";
  auto s = make(cfg, ctx_of(8, 2, 4));
  std::vector<float> x(8, 1.0f);
  int32_t p = 1;
  s->embed(x.data(), &p, 1);
  EXPECT_NEAR(x[0], 1.84147098f, 1e-6);
  EXPECT_NEAR(x[4], 1.54030231f, 1e-6);
  EXPECT_NEAR(x[1], 1.0f + std::sin(0.1), 1e-6);
}

TEST(Sinusoidal, OddWidthConcatSplitsLikeMarian) {
  // d 5: sentinel 3 -> sin of angles j = 0, 2, 4 (i = 0, 1, 2), cos of j = 1, 3 (i = 0, 1).
  PositionConfig cfg;
  cfg.scheme = "sinusoidal";
  auto s = make(cfg, ctx_of(5, 1, 5));
  std::vector<float> x(5, 0.0f);
  int32_t p = 3;
  s->embed(x.data(), &p, 1);
  auto a = [](int i) { return 3.0 / std::pow(10000.0, 2.0 * i / 5.0); };
  EXPECT_EQ(x[0], static_cast<float>(std::sin(a(0))));
  EXPECT_EQ(x[1], static_cast<float>(std::sin(a(1))));
  EXPECT_EQ(x[2], static_cast<float>(std::sin(a(2))));
  EXPECT_EQ(x[3], static_cast<float>(std::cos(a(0))));
  EXPECT_EQ(x[4], static_cast<float>(std::cos(a(1))));
}

TEST(Sinusoidal, LinearScalingHalvesPositions) {
  PositionConfig cfg;
  cfg.scheme = "sinusoidal";
  cfg.scaling.type = ScalingType::Linear;
  cfg.scaling.factor = 2.0;
  auto scaled = make(cfg, ctx_of(8, 2, 4));
  cfg.scaling = Scaling{};
  auto plain = make(cfg, ctx_of(8, 2, 4));
  std::vector<float> a(8, 0.0f), b(8, 0.0f);
  int32_t p10 = 10, p5 = 5;
  scaled->embed(a.data(), &p10, 1);
  plain->embed(b.data(), &p5, 1);
  EXPECT_EQ(a, b);
  std::vector<float> c(8, 0.0f);
  int32_t p5b = 5;
  scaled->embed(c.data(), &p5b, 1);  // position 2.5
  EXPECT_EQ(c[0], static_cast<float>(std::sin(2.5)));
  EXPECT_EQ(c[4], static_cast<float>(std::cos(2.5)));
}
