// `ordo bench`'s renderers: the machine line, the table of rows and the warnings on trusting it,
// where each decode step goes, the summary comparisons, and --json (bench_report.hpp).
#include "bench_report.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <thread>

#include "bench_noise.hpp"
#include "common.hpp"

namespace ordo::cli {
namespace {

// Mean ms per step of each part (StepTimes) over the timed steps.
struct PartsMs {
  double total, linears, attention, rope_and_cache, lm_head, other;
};
PartsMs parts_ms(const StepTimes& t) {
  const double k = t.steps > 0 ? 1e3 / static_cast<double>(t.steps) : 0.0;
  return {t.total * k, t.linears * k, t.attention * k, t.rope_and_cache * k, t.lm_head * k, t.other() * k};
}
nlohmann::json parts_json(const StepTimes& t) {
  const PartsMs p = parts_ms(t);
  return {{"total", p.total},         {"linears", p.linears},
          {"attention", p.attention}, {"rope_and_cache", p.rope_and_cache},
          {"lm_head", p.lm_head},     {"other", p.other}};
}

// Idle OpenMP threads sleep (passive, the CLI's default) or spin. A decode step keeps its threads
// in one region (engine/src/kernels/team.hpp), so this now matters mostly for prefill and between steps.
std::string wait_policy() {
  if (const char* sc = std::getenv("GOMP_SPINCOUNT")) return std::string("GOMP_SPINCOUNT=") + sc;
  const char* p = std::getenv("OMP_WAIT_POLICY");
  std::string v = p ? p : "default";
  std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return std::tolower(c); });
  return v;
}

}  // namespace

std::string fixed(double v, int prec) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", prec, v);
  return buf;
}

std::string row_progress(const BenchRow& r) {
  return "[bench] " + r.phase + " ctx " + std::to_string(r.ctx) + " batch " + std::to_string(r.batch) + " " +
         r.backend + " " + r.dtype + ": " + fixed(r.tokens_per_s, 2) + " tok/s";
}

void BenchReport::print_machine(const BenchMachine& mach, const std::string& kv) const {
  auto values = [](const nlohmann::json& by) {  // "name v, name v"
    std::string out;
    for (auto it = by.begin(); it != by.end(); ++it)
      out += (out.empty() ? "" : ", ") + it.key() + " " + fixed(it.value().get<double>(), 1);
    return out;
  };
  std::cout << "machine: read bandwidth " << fixed(mach.read_gb_s, 1) << " GB/s, peak sgemm " << fixed(mach.peak, 1)
            << " GFLOP/s (" << values(mach.sgemm_by) << "), ordo's linear kernels from cache by dtype and rows "
            << values(mach.linear_by) << " GFLOP/s, " << num_threads() << " threads, kernels " << kernel_isa()
            << ", oneDNN " << onednn_isa() << ", OpenMP wait policy " << wait_policy() << ", KV cache "
            << (kv == "auto" ? std::string("f16 for q8_0/q4_0/q4_k, f32 otherwise") : kv)
            << " (bandwidth and sgemm: best of before and after, linear kernels: best of the probes beside the "
            << "repetitions; each row's roofline is the median of its repetitions against the probes run beside "
            << "them)\n"
            << std::flush;
}

void BenchReport::write_json(const std::string& path, const BenchMachine& mach, const nlohmann::json& model_json,
                             const nlohmann::json& settings, const std::vector<BenchRow>& rows) const {
  nlohmann::json j;
  j["machine"] = {{"read_gb_s", mach.read_gb_s},
                  {"sgemm_gflop_s", mach.peak},
                  {"threads", num_threads()},
                  {"sgemm_gflop_s_by_backend", mach.sgemm_by},
                  {"linear_gflop_s_by_dtype_rows", mach.linear_by},
                  {"kernel_isa", kernel_isa()},
                  {"onednn_isa", onednn_isa()},
                  {"wait_policy", wait_policy()}};
  j["model"] = model_json;
  j["settings"] = settings;
  j["results"] = nlohmann::json::array();
  for (const BenchRow& r : rows) {
    const bool dec = r.phase == "decode";
    auto decode_only = [&](auto v) { return dec ? nlohmann::json(v) : nlohmann::json(nullptr); };
    j["results"].push_back({{"phase", r.phase},
                            {"ctx", r.ctx},
                            {"batch", r.batch},
                            {"step_ms", decode_only(r.seconds_median / steps * 1e3)},
                            {"backend", r.backend},
                            {"dtype", r.dtype},
                            {"kv_dtype", r.kv_dtype},
                            {"tokens_per_s", r.tokens_per_s},
                            {"tokens_per_s_best", r.tokens_per_s_best},
                            {"roofline_fraction", r.roofline_fraction},
                            {"seconds_median", r.seconds_median},
                            {"seconds_min", r.seconds_min},
                            {"ttft_ms", dec ? nlohmann::json(nullptr) : nlohmann::json(r.ttft_ms)},
                            {"achieved", dec ? r.gb_s : r.gflop_s},
                            {"achieved_unit", dec ? "GB/s" : "GFLOP/s"},
                            {"limit", r.limit},
                            {"peak_rss_mib", r.peak_rss_mib},
                            {"step_parts_ms", dec ? parts_json(r.parts) : nlohmann::json(nullptr)},
                            {"bytes_per_step", decode_only(r.bytes_per_step)},
                            {"cache_bytes_per_step", decode_only(r.cache_bytes_per_step)},
                            {"flops_per_step", decode_only(r.flops_per_step)},
                            {"gflop_s", r.gflop_s},
                            {"arith_fraction", decode_only(r.arith_fraction)},
                            {"bound", decode_only(r.bound)}});
  }
  write_file_atomic(path, j.dump(2) + "\n");
}

void BenchReport::print_trust(double load_before) {
  const double load = std::max(load_before, load_average());
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  const std::string machine = machine_busy = busy_reason(0, load, cores);
  if (!machine.empty())
    std::printf(
        "warning: the machine was busy (%s): the speeds and roofline fractions above do not mean much; "
        "run again on an idle machine\n",
        machine.c_str());
  if (!noisy_rows.empty()) {
    std::string list;
    for (const std::string& n : noisy_rows) list += (list.empty() ? "" : ", ") + n;
    std::printf("warning: %zu row(s) too noisy to compare (repetitions differ by more than %.0f%%): %s\n",
                noisy_rows.size(), 100.0 * kNoisySpread, list.c_str());
  }
  if (over_roofline)
    std::printf(
        "warning: a roofline fraction over 100%% is a measurement problem (the limit probes beside the "
        "repetitions ran slower than the model did, e.g. on a busy machine), not a speed\n");
}

void BenchReport::print_row(const BenchRow& r) {
  if (!header_done) {
    std::printf("%-8s %6s %5s %-9s %-5s %11s %11s %9s %-10s %12s %12s %6s %9s %9s\n", "phase", "ctx", "batch",
                "backend", "dtype", "tok/s(med)", "tok/s(best)", "roofline", "bound", "achieved", "limit", "arith",
                "ttft_ms", "rss_MiB");
    header_done = true;
  }
  const bool dec = r.phase == "decode";
  const char* unit = dec ? " GB/s" : " GF/s";
  const std::string ach = fixed(dec ? r.gb_s : r.gflop_s, 1) + unit;
  const std::string lim = fixed(r.limit, 1) + unit;
  // Decode: achieved and limit are bytes (weights + caches); arith is the linear kernels' FLOP/s
  // against their peak from cache.
  const std::string arith = dec ? fixed(100.0 * r.arith_fraction, 0) + "%" : "-";
  // Above 100% of the roofline is a measurement problem, not a speed: shown as such (note below).
  const std::string roof = r.roofline_fraction > 1.0 ? "over 100?" : fixed(100.0 * r.roofline_fraction, 1) + "%";
  over_roofline = over_roofline || r.roofline_fraction > 1.0;
  if (!busy_reason(r.spread, 0, 0).empty()) noisy_rows.push_back(r.phase + " ctx " + std::to_string(r.ctx));
  std::printf("%-8s %6lld %5lld %-9s %-5s %11.2f %11.2f %9s %-10s %12s %12s %6s %9s %9.0f\n", r.phase.c_str(),
              static_cast<long long>(r.ctx), static_cast<long long>(r.batch), r.backend.c_str(), r.dtype.c_str(),
              r.tokens_per_s, r.tokens_per_s_best, roof.c_str(), dec ? r.bound.c_str() : "arithmetic", ach.c_str(),
              lim.c_str(), arith.c_str(), dec ? "-" : fixed(r.ttft_ms, 1).c_str(), r.peak_rss_mib);
  std::fflush(stdout);
}

// Where each decode row's step goes: the mean over its timed steps (the table above gives the
// median repetition), from StepTimes.
void BenchReport::print_step_parts(const std::vector<BenchRow>& rows) {
  bool header = false;
  for (const BenchRow& r : rows) {
    if (r.phase != "decode" || r.parts.steps == 0) continue;
    if (!header) {
      std::printf("decode step, ms (mean of the timed steps):\n%6s %5s %-9s %-5s %8s %8s %9s %10s %8s %8s\n", "ctx",
                  "batch", "backend", "dtype", "step", "linears", "attention", "rope+cache", "lm_head", "other");
      header = true;
    }
    const PartsMs p = parts_ms(r.parts);
    std::printf("%6lld %5lld %-9s %-5s %8.2f %8.2f %9.2f %10.2f %8.2f %8.2f\n", static_cast<long long>(r.ctx),
                static_cast<long long>(r.batch), r.backend.c_str(), r.dtype.c_str(), p.total, p.linears, p.attention,
                p.rope_and_cache, p.lm_head, p.other);
  }
}

void BenchReport::print_summary(const std::vector<BenchRow>& rows, const std::vector<int64_t>& ctx_lens) const {
  auto find = [&](const std::string& be, const std::string& dt, int64_t ctx, int64_t batch) -> const BenchRow* {
    for (const BenchRow& r : rows)
      if (r.phase == "decode" && r.backend == be && r.dtype == dt && r.ctx == ctx && r.batch == batch) return &r;
    return nullptr;
  };
  if (ctx_lens.empty()) return;
  const int64_t c0 = ctx_lens.front(), c1 = ctx_lens.back();
  for (const BenchRow& r : rows) {
    if (r.phase != "decode" || r.batch != 1 || r.ctx != c0) continue;
    if (c1 != c0)
      if (const BenchRow* far = find(r.backend, r.dtype, c1, 1))
        std::printf("%s %s: %s\n", r.backend.c_str(), r.dtype.c_str(),
                    speed_comparison("decode at ctx " + std::to_string(c1), far->tokens_per_s, r.tokens_per_s,
                                     "at ctx " + std::to_string(c0), far->spread, r.spread, machine_busy)
                        .c_str());
    if (r.dtype != "f32")
      if (const BenchRow* f = find(r.backend, "f32", c0, 1)) {
        if (!machine_busy.empty())
          std::printf("%s %s: decode against f32 not comparable, the machine was busy (%s)\n", r.backend.c_str(),
                      r.dtype.c_str(), machine_busy.c_str());
        else
          std::printf("%s %s: decode at ctx %lld is %.2fx f32 (%.2fx per unit of probed bandwidth)\n",
                      r.backend.c_str(), r.dtype.c_str(), static_cast<long long>(c0), r.tokens_per_s / f->tokens_per_s,
                      r.tokens_per_limit / f->tokens_per_limit);
      }
  }
  for (const BenchRow& r : rows) {
    if (r.phase != "decode" || r.batch == 1) continue;
    if (const BenchRow* one = find(r.backend, r.dtype, r.ctx, 1)) {
      std::printf(
          "%s %s: decode at ctx %lld, %lld sequences: %.2fx the aggregate tok/s of one (%.2fx per unit of "
          "probed bandwidth), %.1f ms per step against %.1f",
          r.backend.c_str(), r.dtype.c_str(), static_cast<long long>(r.ctx), static_cast<long long>(r.batch),
          r.tokens_per_s / one->tokens_per_s, r.tokens_per_limit / one->tokens_per_limit,
          r.seconds_median / steps * 1e3, one->seconds_median / steps * 1e3);
      if (r.parts.steps > 0 && one->parts.steps > 0) {  // which parts the extra sequences cost
        const PartsMs a = parts_ms(r.parts), b = parts_ms(one->parts);
        std::printf(
            "; mean step parts against one sequence: linears %+.1f ms, attention %+.1f, rope and cache "
            "writes %+.1f, lm_head %+.1f, other %+.1f",
            a.linears - b.linears, a.attention - b.attention, a.rope_and_cache - b.rope_and_cache,
            a.lm_head - b.lm_head, a.other - b.other);
      }
      // What holds the batched step: its bytes (weights once, every sequence's cache) at the
      // probed bandwidth, or its linear FLOPs at the kernels' peak from cache.
      std::printf(
          "; bound by %s: %.0f MB per step (%.0f MB of caches) at %.0f%% of the probed bandwidth, linear "
          "arithmetic at %.0f%% of the %s kernels' peak",
          r.bound.c_str(), r.bytes_per_step / 1e6, r.cache_bytes_per_step / 1e6, 100.0 * r.gb_s / r.limit,
          100.0 * r.arith_fraction, r.dtype.c_str());
      std::printf("\n");
    }
  }
}

}  // namespace ordo::cli
