// `ordo bench`'s renderers: the machine line, the table of rows and the warnings on trusting it,
// where each decode step goes, the summary comparisons, and --json.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench_machine.hpp"

namespace ordo::cli {

struct BenchRow {
  std::string phase, backend, dtype, kv_dtype;
  int64_t ctx = 0;
  int64_t batch = 1;  // sequences in flight; tokens_per_s is their aggregate
  double tokens_per_s = 0, tokens_per_s_best = 0, roofline_fraction = 0, seconds_median = 0, seconds_min = 0;
  double limit = 0;             // median of the limit probes run beside each repetition (GB/s or GFLOP/s)
  double tokens_per_limit = 0;  // median of tokens/s ÷ limit per repetition: speed with the machine's drift divided out
  double ttft_ms = 0, peak_rss_mib = 0, gflop_s = 0, gb_s = 0;  // peak RSS: since this dtype's model was built
  double spread = 0;                                            // slowest repetition ÷ fastest − 1 (bench_noise.hpp)
  // Decode, per step: bytes read (weights + caches), of them the caches', and the linear kernels'
  // FLOPs; their achieved FLOP/s against the dtype's kernel peak; which limit is the nearer.
  double bytes_per_step = 0, cache_bytes_per_step = 0, flops_per_step = 0, arith_fraction = 0;
  std::string bound;
  StepTimes parts;  // decode: summed over the timed repetitions' steps
};

// "%.*f" of v.
std::string fixed(double v, int prec);

// "[bench] decode ctx 128 batch 1 onednn f32: 12.34 tok/s", a row as it is finished.
std::string row_progress(const BenchRow& r);

// Prints the results in order: the machine, every row, then the trust warnings, step parts and
// summary, which read what the rows showed.
class BenchReport {
 public:
  explicit BenchReport(int steps) : steps(steps) {}
  // kv: the --kv-dtype asked for ("auto": f16 for q8_0/q4_0, else f32).
  void print_machine(const BenchMachine& mach, const std::string& kv) const;
  void print_row(const BenchRow& r);  // the table header before the first
  // After the table: plainly, when the figures above cannot be trusted (load_before: the load
  // average before the run, negative when unknown).
  void print_trust(double load_before);
  // Where each decode row's step goes: the mean over its timed steps (the table gives the median
  // repetition), from StepTimes.
  static void print_step_parts(const std::vector<BenchRow>& rows);
  void print_summary(const std::vector<BenchRow>& rows, const std::vector<int64_t>& ctx_lens) const;
  void write_json(const std::string& path, const BenchMachine& mach, const nlohmann::json& model_json,
                  const nlohmann::json& settings, const std::vector<BenchRow>& rows) const;

 private:
  int steps;  // decode steps per repetition
  bool header_done = false, over_roofline = false;
  std::vector<std::string> noisy_rows;
  std::string machine_busy;  // busy_reason of the load average before and after, "" when idle
};

}  // namespace ordo::cli
