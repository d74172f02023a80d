// ordo/stats.hpp against reference values from SciPy 1.10.1 (scipy.special.betainc,
// scipy.stats.t.cdf / t.ppf, scipy.stats.sem, scipy.stats.ttest_rel), computed once with
// python3 and pasted here.
#include <gtest/gtest.h>

#include <cmath>

#include "ordo/stats.hpp"
#include "support/golden.hpp"

namespace st = ordo::stats;
using ordo::test::error_of;

namespace {
void expect_rel(double got, double want, double rel, const char* what) {
  EXPECT_NEAR(got, want, rel * std::fabs(want)) << what;
}
}  // namespace

TEST(Stats, IncompleteBetaMatchesScipy) {
  struct Case {
    double a, b, x, want;
  };
  for (const Case& c : {Case{0.5, 0.5, 0.3, 0.3690101195655454}, Case{2, 3, 0.4, 0.5247999999999999},
                        Case{10, 0.5, 0.9, 0.15164090963470997}, Case{0.5, 10, 0.01, 0.3420718248432155},
                        Case{50, 50, 0.45, 0.15865219893709973}, Case{1.5, 0.5, 0.999, 0.9597433418849682}})
    expect_rel(st::incomplete_beta(c.a, c.b, c.x), c.want, 1e-10, "I_x(a, b)");
  EXPECT_EQ(st::incomplete_beta(2, 3, 0), 0.0);
  EXPECT_EQ(st::incomplete_beta(2, 3, 1), 1.0);
  EXPECT_NE(error_of([] { st::incomplete_beta(2, 3, 1.5); }).find("x in [0, 1]"), std::string::npos);
}

TEST(Stats, StudentTCdfAndQuantileMatchScipy) {
  struct Cdf {
    double t, dof, want;
  };
  for (const Cdf& c :
       {Cdf{-2.5, 1, 0.12111894159084335}, Cdf{0.3, 2, 0.6037571695799111}, Cdf{1.96, 5, 0.946356023747353},
        Cdf{-4.0, 10, 0.0012591663123683462}, Cdf{2.0, 100, 0.9758939106344332}, Cdf{12.0, 3, 0.9993774920996054}})
    expect_rel(st::student_t_cdf(c.t, c.dof), c.want, 1e-10, "t cdf");
  EXPECT_EQ(st::student_t_cdf(0, 7), 0.5);
  struct Q {
    double p, dof, want;
  };
  for (const Q& q : {Q{0.975, 1, 12.706204736432095}, Q{0.975, 2, 4.302652729911275}, Q{0.975, 4, 2.7764451051977987},
                     Q{0.975, 29, 2.045229642132703}, Q{0.995, 7, 3.4994832973505026}, Q{0.9, 1000, 1.2823987214609247},
                     Q{0.025, 3, -3.1824463052842638}})
    expect_rel(st::student_t_quantile(q.p, q.dof), q.want, 1e-10, "t quantile");
  EXPECT_NE(error_of([] { st::student_t_quantile(1.0, 3); }).find("p must be in (0, 1)"), std::string::npos);
  EXPECT_NE(error_of([] { st::student_t_cdf(1.0, 0); }).find("degrees of freedom"), std::string::npos);
}

TEST(Stats, MeanIntervalMatchesScipy) {
  const st::MeanInterval m = st::mean_interval({0.91, 0.87, 0.95, 0.89});
  EXPECT_EQ(m.n, 4);
  expect_rel(m.mean, 0.905, 1e-12, "mean");
  expect_rel(m.sd, 0.034156502553198645, 1e-12, "sd");
  expect_rel(m.half_width, 0.05435061767592976, 1e-10, "half width: sem · t.ppf(0.975, 3)");
  const st::MeanInterval one = st::mean_interval({2.5});
  EXPECT_EQ(one.mean, 2.5);
  EXPECT_TRUE(std::isnan(one.half_width)) << "no interval from one seed";
  EXPECT_TRUE(std::isnan(st::mean_interval({}).mean));
}

TEST(Stats, PairedTTestMatchesScipy) {
  const st::PairedTest t =
      st::paired_t_test({1.2, 0.4, 2.2, -0.3, 0.9, 1.5, 0.1}, {0.8, 0.5, 1.1, -0.6, 0.2, 1.4, 0.3});
  EXPECT_EQ(t.n, 7);
  expect_rel(t.mean_diff, 0.32857142857142857, 1e-12, "mean difference");
  expect_rel(t.t, 1.9013243196690353, 1e-10, "t");
  expect_rel(t.p, 0.10597505849620618, 1e-9, "two-sided p");
  // Identical columns: no evidence of a difference; a constant non-zero shift: certain.
  EXPECT_EQ(st::paired_t_test({1, 2, 3}, {1, 2, 3}).p, 1.0);
  EXPECT_EQ(st::paired_t_test({2, 3, 4}, {1, 2, 3}).p, 0.0);
  EXPECT_TRUE(std::isnan(st::paired_t_test({1}, {2}).p));
  EXPECT_NE(error_of([] { st::paired_t_test({1, 2}, {1}); }).find("2 values against 1"), std::string::npos);
}
