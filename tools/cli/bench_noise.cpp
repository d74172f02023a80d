// `ordo bench`: how much its figures can be trusted (bench_noise.hpp).
#include "bench_noise.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace ordo::cli {

double repetition_spread(const std::vector<double>& seconds) {
  if (seconds.size() < 2) return 0.0;
  const auto [lo, hi] = std::minmax_element(seconds.begin(), seconds.end());
  return *lo > 0 ? *hi / *lo - 1.0 : 0.0;
}

double load_average() {
  double l[1];
  return getloadavg(l, 1) == 1 ? l[0] : -1.0;
}

std::string busy_reason(double spread, double load, int cores) {
  char buf[160];
  if (spread > kNoisySpread) {
    std::snprintf(buf, sizeof buf, "its repetitions differ by %.0f%% (slowest against fastest)", 100.0 * spread);
    return buf;
  }
  if (cores > 0 && load > cores + 1.0) {
    std::snprintf(buf, sizeof buf, "the load average was %.1f on %d cores", load, cores);
    return buf;
  }
  return "";
}

std::string speed_comparison(const std::string& what, double tok_s, double base_tok_s, const std::string& base,
                             double spread, double base_spread, const std::string& busy) {
  if (!busy.empty()) return what + " against " + base + ": not comparable, the machine was busy (" + busy + ")";
  const double noise = std::max(spread, base_spread);
  if (noise > kNoisySpread) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "%.0f%%", 100.0 * noise);
    return what + " against " + base + ": not comparable, the machine was too busy (repetitions differ by " + buf + ")";
  }
  const double slower = 1.0 - tok_s / base_tok_s;  // > 0: slower
  char buf[64];
  if (std::fabs(slower) <= noise) std::snprintf(buf, sizeof buf, "%.0f%%", 100.0 * noise);
  if (std::fabs(slower) <= noise)
    return what + ": no measurable difference from " + base + " (within the repetitions' " + buf + " spread)";
  std::snprintf(buf, sizeof buf, "%.1f%% %s", 100.0 * std::fabs(slower), slower > 0 ? "slower" : "faster");
  return what + " is " + buf + " than " + base;
}

}  // namespace ordo::cli
