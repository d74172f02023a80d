// ordo bench: prefill / decode throughput, time to first token and peak memory per GEMM backend and
// weight dtype, each as a fraction of the machine's own limits measured on the spot (a limit probe
// runs beside every timed repetition; the fraction is the median of the paired ratios, which
// holds still when a shared machine's speed drifts during the run):
//   * decode: the roofline step time ÷ the measured one. A step reads the weights once and each
//     sequence's cached keys and values, and does 2·(linear params + vocab·d) FLOPs per sequence
//     in ordo's linear kernels; its roofline time is the longer of bytes ÷ read bandwidth and
//     FLOPs ÷ those kernels' peak on weights in cache (one sequence: the bytes; enough sequences:
//     the arithmetic).
//   * prefill (compute-bound): achieved FLOP/s ÷ the FLOP rate the probed peaks allow, FLOPs =
//     2·params·T + attention; attention at the peak sgemm rate, the linears at the larger of that
//     and ordo's own kernels' peak for the weight dtype (from cache, 64 rows; float weights: sgemm)
// On a synthetic random-weight Llama-shaped model (--synthetic, default 110m) or a real one (-m).
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench_machine.hpp"
#include "bench_noise.hpp"
#include "bench_report.hpp"
#include "common.hpp"
#include "ordo/input.hpp"
#include "ordo/quantize.hpp"
#include "ordo/synthetic.hpp"
#include "progress.hpp"
#include "usage.hpp"

namespace ordo::cli {
namespace {

using Clock = BenchClock;

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::string item;
  for (char c : s + ",") {
    if (c == ',' || c == ' ') {
      if (!item.empty()) out.push_back(item);
      item.clear();
    } else {
      item += c;
    }
  }
  return out;
}

std::vector<int64_t> int_list(const std::string& s, const char* what) {
  std::vector<int64_t> v;
  for (const std::string& x : split_list(s)) {
    char* end = nullptr;
    long long n = std::strtoll(x.c_str(), &end, 10);
    if (*end != '\0' || n <= 0) throw Error(std::string(what) + ": '" + x + "' is not a positive integer");
    v.push_back(n);
  }
  return v;
}

// Median over repetitions of (work / time) / limit, each rep against the limit probed beside it
// (tokens per second per GB/s: speed with the machine's drift divided out).
double paired_fraction(double work, const std::vector<double>& times, const std::vector<double>& limits) {
  std::vector<double> f;
  for (size_t i = 0; i < times.size(); ++i) f.push_back(limits[i] > 0 ? work / times[i] / limits[i] : 0.0);
  return f.empty() ? 0.0 : median(f);
}

struct BenchCommand : Command {
  std::string dir, synthetic, backends = "onednn,openblas", dtypes = "f32,int8", json_path;
  std::string prompts = "128,512", contexts = "128,1024", kv_dtype = "auto", batches = "1";
  int threads = 0, warmup = 1, reps = 5, steps = 16;
  uint64_t seed = 1;
  bool quick = false;

  CLI::App* add(CLI::App& app) override {
    CLI::App* c = app.add_subcommand(
        "bench", "Prefill/decode speed, TTFT and peak memory per backend and weight dtype, vs the machine's roofline");
    auto* m = c->add_option("-m,--model", dir, "Benchmark this model directory");
    c->add_option("--synthetic", synthetic,
                  "Random-weight Llama-shaped model: 110m, 1b or DIM,LAYERS,HEADS,KV_HEADS,FFN,VOCAB (default: 110m)")
        ->excludes(m);
    c->add_option("--backend", backends, "GEMM backends, comma-separated")->capture_default_str();
    c->add_option(
         "--dtypes,--dtype", dtypes,
         "Weight dtypes, comma-separated: f32, f16, bf16, int8, q8_0, q4_0, q4_k (a GGUF file's Q4_K as stored)")
        ->capture_default_str();
    c->add_option("--kv-dtype", kv_dtype,
                  "KV cache storage: f32, f16 or int8; auto: each dtype's default (f16 for q8_0/q4_0/q4_k, else f32)")
        ->capture_default_str()
        ->check(CLI::IsMember({"auto", "f32", "f16", "int8"}, CLI::ignore_case));
    c->add_option("--prompts", prompts, "Prefill prompt lengths")->capture_default_str();
    c->add_option("--ctx-lengths", contexts, "Decode context lengths")->capture_default_str();
    add_alias(c, "--contexts", contexts, "--ctx-lengths");
    add_alias(c, "--batch", batches, "--parallel");
    c->add_option("--parallel", batches,
                  "Sequences in flight, comma-separated (e.g. 1,4,16,64): each prefill row runs that many prompts in "
                  "one forward, each decode step advances that many sequences; tok/s is the aggregate")
        ->capture_default_str();
    c->add_option("--steps", steps, "Decode steps timed per repetition")->capture_default_str();
    c->add_option("--warmup", warmup, "Untimed warm-up runs")->capture_default_str();
    c->add_option("--reps", reps, "Timed repetitions (median and best reported)")->capture_default_str();
    c->add_option("-t,--threads", threads, "Threads (0: all cores)")->capture_default_str();
    c->add_option("-s,--seed", seed, "Synthetic weights seed")->capture_default_str();
    c->add_option("--json", json_path, "Also write the results as JSON to this file");
    c->add_flag("--quick", quick, "Tiny sizes, one repetition (smoke test; numbers are not meaningful)");
    return c;
  }

  // The model under test, as loaded for one weight dtype.
  struct Subject {
    std::unique_ptr<Model> model;
    std::unique_ptr<Transformer> owned;
    Transformer& tf() { return owned ? *owned : model->engine(); }
  };

  Subject load(DType dt, const std::vector<Backend>& bes, const std::vector<int64_t>& prompt_lens,
               const std::vector<int64_t>& ctx_lens) const {
    Subject m;
    if (dir.empty()) {
      SyntheticShape shape = parse_synthetic_shape(synthetic.empty() ? "110m" : synthetic);
      int64_t longest = 2048;
      for (int64_t T : prompt_lens) longest = std::max(longest, T);
      for (int64_t C : ctx_lens) longest = std::max(longest, C + steps + 1);
      shape.max_positions = longest;
      ModelSpec spec = synthetic_llama(shape, dt, seed);
      m.owned = std::make_unique<Transformer>(std::move(spec), bes[0]);
    } else {
      ModelOptions o;
      o.backend = bes[0];
      o.threads = threads;
      o.load_tokenizer = false;
      check_model_dir("-m", dir);
      // A model whose layers hold dt weights (a q4_0 file) runs as stored, as llama.cpp runs it: its
      // head is often Q8_0, and weights dt cannot hold (rows not a multiple of 32) stay F16. Any
      // other is converted to dt, head and all.
      m.model = std::make_unique<Model>(Model::load(dir, o));
      if (!layers_hold(m.model->engine().spec(), dt)) {
        if (dt == DType::Q4_K)
          throw Error("bench: --dtypes q4_k runs a GGUF file's Q4_K layers as stored, and " + dir +
                      " has none (ordo does not write q4_k)");
        m.model.reset();
        reset_peak_rss();  // the row's peak memory is the converted model's, not the first load's
        o.dtype = dt;
        m.model = std::make_unique<Model>(Model::load(dir, o));
      }
    }
    return m;
  }

  // Whether a linear weight of the decoder's layers is stored as dt.
  static bool layers_hold(const ModelSpec& s, DType dt) {
    for (const Layer& l : s.decoder.layers)
      for (const Linear* w :
           {&l.self_attn.q, &l.self_attn.k, &l.self_attn.v, &l.self_attn.out, &l.ffn.gate, &l.ffn.up, &l.ffn.down})
        if (w->present() && w->weight.dtype == dt) return true;
    return false;
  }

  // A result row from per-repetition times, the limits probed beside them and each repetition's
  // roofline time (what it would take at those limits): the roofline fraction is the median of
  // roofline time ÷ time.
  static BenchRow timed_row(const char* phase, int64_t ctx, int64_t batch, Backend be, DType dt, double tokens,
                            const std::vector<double>& times, const std::vector<double>& limits,
                            const std::vector<double>& roofline_s, const BenchMachine& mach) {
    BenchRow row;
    row.phase = phase;
    row.ctx = ctx;
    row.batch = batch;
    row.backend = backend_name(be);
    row.dtype = weight_dtype_name(dt);
    row.seconds_median = median(times);
    row.seconds_min = *std::min_element(times.begin(), times.end());
    row.tokens_per_s = tokens / row.seconds_median;
    row.tokens_per_s_best = tokens / row.seconds_min;
    row.limit = median(limits);
    std::vector<double> fractions;
    for (size_t i = 0; i < times.size(); ++i) fractions.push_back(roofline_s[i] / times[i]);
    row.roofline_fraction = median(fractions);
    row.tokens_per_limit = paired_fraction(tokens, times, limits);
    row.spread = repetition_spread(times);
    row.peak_rss_mib = peak_rss_mib() - mach.read_probe.mib();  // the probe buffer is not the model's
    return row;
  }

  static std::vector<int32_t> ids_of_len(int64_t n, int64_t vocab) {
    std::vector<int32_t> ids(n);
    for (int64_t i = 0; i < n; ++i) ids[i] = static_cast<int32_t>((i * 7919 + 13) % vocab);
    return ids;
  }

  // B prompts of T tokens in one forward.
  BenchRow prefill(Transformer& tf, Backend be, DType dt, int64_t B, int64_t T, BenchMachine& mach) const {
    const ModelSpec& s = tf.spec();
    const std::vector<int32_t> ids = ids_of_len(T, s.vocab_size);
    std::vector<double> times, sgemm_peaks, linear_peaks;
    // The caches are made once and emptied before each rep, as llama-bench reuses its context: a
    // rep times the forward, not the first touch of a fresh cache's pages (~2% of a 512-token Q4_0
    // prefill).
    std::vector<Sequence> seqs;
    for (int64_t b = 0; b < B; ++b) seqs.push_back(tf.new_sequence(T));
    for (int r = 0; r < warmup + reps; ++r) {
      // The peak probe runs right before each timed rep: on a shared machine the two then see the
      // same conditions, and the row's fraction is the median of the paired ratios.
      const double lim = r >= warmup ? mach.peak_now() : 0.0;
      // Block weights run ordo's integer kernels, which outpace the float sgemm: their linears
      // are held to those kernels' own peak at a prompt's row count.
      const double lin = r >= warmup && dt != DType::F32 ? mach.linear_now(dt, std::min<int64_t>(B * T, 64)) : 0.0;
      std::vector<DecodeRequest> reqs;
      for (Sequence& q : seqs) {
        q.truncate(0);
        reqs.push_back(DecodeRequest{&q, ids, {}, LogitsFor::Last});
      }
      const auto t0 = Clock::now();
      tf.decode_batch(reqs);
      const double t = seconds_since(t0);
      if (r >= warmup) {
        times.push_back(t);
        sgemm_peaks.push_back(lim);
        linear_peaks.push_back(lin);
      }
    }
    const double L = static_cast<double>(s.decoder.layers.size());
    const double linear_flops =
        B * (2.0 * static_cast<double>(decoder_linear_params(s)) * T + 2.0 * s.d_model * s.vocab_size);
    const double attention_flops = B * 2.0 * L * s.n_heads * s.head_dim * double(T) * double(T + 1);
    const double flops = linear_flops + attention_flops;
    // Each repetition's roofline: attention (float, oneDNN) at the sgemm peak and the linears at
    // the larger of that and their own kernels' peak, both probed beside it. A repetition's limit
    // is the FLOP rate that roofline allows this mix.
    std::vector<double> roofline_s, limits;
    for (size_t i = 0; i < times.size(); ++i) {
      const double sg = sgemm_peaks[i], lin = std::max(sg, linear_peaks[i]);
      roofline_s.push_back(sg > 0 ? (linear_flops / lin + attention_flops / sg) / 1e9 : 0.0);
      limits.push_back(roofline_s.back() > 0 ? flops / 1e9 / roofline_s.back() : 0.0);
    }
    BenchRow row = timed_row("prefill", T, B, be, dt, double(B * T), times, limits, roofline_s, mach);
    row.kv_dtype = weight_dtype_name(tf.kv_dtype());
    row.ttft_ms = row.seconds_median * 1e3;
    row.gflop_s = flops / row.seconds_median / 1e9;
    return row;
  }

  // B sequences at context C, one token each per step.
  BenchRow decode(Transformer& tf, Backend be, DType dt, int64_t B, int64_t C, BenchMachine& mach) const {
    const double weight_bytes = static_cast<double>(decode_weight_bytes(tf.spec()));
    const std::vector<int32_t> ids = ids_of_len(C + steps, tf.spec().vocab_size);
    std::vector<Sequence> seqs;
    for (int64_t b = 0; b < B; ++b) {
      seqs.push_back(tf.new_sequence(C + steps + 1));
      tf.decode(seqs.back(), std::vector<int32_t>(ids.begin(), ids.begin() + C), {}, LogitsFor::Last);
    }
    std::vector<DecodeRequest> reqs;
    for (Sequence& q : seqs) reqs.push_back(DecodeRequest{&q, {0}, {}, LogitsFor::Last});
    std::vector<double> times, limits, peaks;
    StepTimes parts, ignored;
    for (int r = 0; r < warmup + reps; ++r) {
      const double lim = r >= warmup ? mach.read_probe.gb_s(2) : 0.0;  // paired probes, as for prefill
      if (r >= warmup) peaks.push_back(mach.linear_now(dt, B));
      for (Sequence& q : seqs) q.truncate(C);  // back to the prefilled context
      const StepTimes::Recording recording(r >= warmup ? parts : ignored);
      const auto t0 = Clock::now();
      for (int k = 0; k < steps; ++k) {
        if (B == 1) {
          tf.decode(seqs[0], {ids[C + k]}, {}, LogitsFor::Last);
        } else {
          for (DecodeRequest& q : reqs) q.ids[0] = ids[C + k];
          tf.decode_batch(reqs);
        }
      }
      const double t = seconds_since(t0);
      if (r >= warmup) {
        times.push_back(t);
        limits.push_back(lim);
      }
    }
    // Step k reads C + k + 1 cached rows per sequence (its own included): the mean over the steps.
    const ModelSpec& s = tf.spec();
    const DType kv = tf.kv_dtype();
    const double rows_read = static_cast<double>(C) + 0.5 * static_cast<double>(steps + 1);
    const double row_bytes = 2.0 * static_cast<double>(s.decoder.layers.size() * s.n_kv_heads) *
                             static_cast<double>(s.head_dim * static_cast<int64_t>(dtype_size(kv)) +
                                                 (kv == DType::I8 ? 4 : 0));  // + an I8 row's scale
    const double cache_bytes = static_cast<double>(B) * row_bytes * rows_read;
    const double bytes = weight_bytes + cache_bytes;
    const double flops =
        2.0 * static_cast<double>(B) * static_cast<double>(decoder_linear_params(s) + s.vocab_size * s.d_model);
    // Each repetition's roofline: the longer of its bytes at the bandwidth and its FLOPs at the
    // kernels' peak, both probed beside it.
    std::vector<double> roofline_s;
    for (size_t i = 0; i < times.size(); ++i) {
      const double mem_s = limits[i] > 0 ? bytes / (limits[i] * 1e9) : 0.0;
      const double arith_s = peaks[i] > 0 ? flops / (peaks[i] * 1e9) : 0.0;
      roofline_s.push_back(steps * std::max(mem_s, arith_s));
    }
    BenchRow row = timed_row("decode", C, B, be, dt, double(steps * B), times, limits, roofline_s, mach);
    row.kv_dtype = weight_dtype_name(kv);
    const double peak = median(peaks);
    row.bytes_per_step = bytes;
    row.cache_bytes_per_step = cache_bytes;
    row.flops_per_step = flops;
    row.gb_s = row.tokens_per_s / B * bytes / 1e9;
    row.gflop_s = row.tokens_per_s / B * flops / 1e9;
    row.arith_fraction = peak > 0 ? row.gflop_s / peak : 0.0;
    row.bound = peak > 0 && flops / peak > bytes / row.limit ? "arithmetic" : "memory";
    row.parts = parts;
    return row;
  }

  void validate() const override {
    check_flag_range("-t/--threads", threads, 0, kMaxThreads);
    if (steps < 1) throw Error("--steps must be at least 1, got " + std::to_string(steps));
    if (warmup < 0) throw Error("--warmup must be >= 0, got " + std::to_string(warmup));
    if (reps < 1) throw Error("--reps must be at least 1, got " + std::to_string(reps));
    int_list(prompts, "--prompts");
    int_list(contexts, "--ctx-lengths");
    int_list(batches, "--parallel");
  }

  // --quick: tiny sizes and one repetition, unless the lengths were given.
  void apply_quick() {
    if (prompts == "128,512") prompts = "16,32";
    if (contexts == "128,1024") contexts = "16,48";
    steps = std::min(steps, 4);
    reps = 1;
    warmup = 0;
  }

  nlohmann::json describe_model(const ModelSpec& s) const {
    return {{"name", dir.empty() ? (synthetic.empty() ? "110m" : synthetic) : dir},
            {"synthetic", dir.empty()},
            {"parameters", s.parameter_count()},
            {"d_model", s.d_model},
            {"layers", s.decoder.layers.size()},
            {"heads", s.n_heads},
            {"kv_heads", s.n_kv_heads},
            {"vocab", s.vocab_size}};
  }

  int run() override {
    validate();
    set_num_threads(threads);
    if (quick) apply_quick();
    const std::vector<int64_t> prompt_lens = int_list(prompts, "--prompts"),
                               ctx_lens = int_list(contexts, "--ctx-lengths");
    const std::vector<int64_t> batch_sizes = int_list(batches, "--parallel");
    if (prompt_lens.empty() && ctx_lens.empty())
      throw Error("bench: nothing to measure (empty --prompts and --ctx-lengths)");
    std::vector<Backend> bes;
    for (const std::string& b : split_list(backends)) bes.push_back(parse_backend(b));
    std::vector<DType> dts;
    // q4_k: read from GGUF files, never written, so a dtype to bench but not to convert to.
    for (std::string d : split_list(dtypes)) {
      std::transform(d.begin(), d.end(), d.begin(), [](unsigned char c) { return std::tolower(c); });
      dts.push_back(d == "q4_k" ? DType::Q4_K : parse_weight_dtype(d));
    }
    if (bes.empty() || dts.empty()) throw Error("bench: empty --backend or --dtypes list");
    std::string kv_name = kv_dtype;
    std::transform(kv_name.begin(), kv_name.end(), kv_name.begin(), [](unsigned char c) { return std::tolower(c); });
    const bool kv_auto = kv_name == "auto";
    const DType kv_given = kv_auto ? DType::F32 : parse_weight_dtype(kv_dtype);
    if (!json_path.empty()) check_output_path(json_path, {dir});  // before the run: written at its end

    const double load_before = load_average();
    std::cerr << "[bench] measuring machine limits (" << num_threads() << " threads)...\n";
    BenchMachine mach(quick, bes);
    mach.measure();
    std::cerr << "[bench] read bandwidth " << fixed(mach.read_gb_s, 1) << " GB/s, peak sgemm " << fixed(mach.peak, 1)
              << " GFLOP/s (first measurement)\n";

    nlohmann::json model_json;
    std::vector<BenchRow> rows;
    Progress pg("ordo bench", dts.size() * bes.size() * batch_sizes.size() * (prompt_lens.size() + ctx_lens.size()));
    size_t k = 0;
    for (DType dt : dts) {
      reset_peak_rss();
      const auto tl = Clock::now();
      Subject subject = load(dt, bes, prompt_lens, ctx_lens);
      Transformer& tf = subject.tf();
      tf.set_kv_dtype(kv_auto ? Transformer::default_kv_dtype(tf.spec()) : kv_given);
      const ModelSpec& s = tf.spec();
      if (s.graph != GraphKind::Decoder) throw Error("bench: " + s.architecture + " is not a decoder-only model");
      pg.note("[bench] " + std::string(weight_dtype_name(dt)) + " model ready in " + fixed(seconds_since(tl), 1) +
              " s (" + fixed(static_cast<double>(decode_weight_bytes(s)) / 1e6, 1) +
              " MB of weights per decode token)");
      model_json = describe_model(s);
      const int64_t max_pos = s.position.max_positions > 0 ? s.position.max_positions : INT64_MAX;
      for (Backend be : bes) {
        tf.set_backend(be);
        for (int64_t B : batch_sizes) {
          for (int64_t T : prompt_lens) {
            if (T > max_pos) {
              pg.note("[bench] skipping prompt " + std::to_string(T) + ": model max positions " +
                      std::to_string(max_pos));
              continue;
            }
            pg.step(++k, row_name("prefill", T, B, be, dt));
            rows.push_back(prefill(tf, be, dt, B, T, mach));
            pg.note(row_progress(rows.back()));
          }
          for (int64_t C : ctx_lens) {
            if (C + steps > max_pos) {
              pg.note("[bench] skipping decode at ctx " + std::to_string(C) + ": model max positions " +
                      std::to_string(max_pos));
              continue;
            }
            pg.step(++k, row_name("decode", C, B, be, dt));
            rows.push_back(decode(tf, be, dt, B, C, mach));
            pg.note(row_progress(rows.back()));
          }
        }
      }
    }
    pg.finish();
    mach.measure();
    report(mach, kv_auto ? "auto" : weight_dtype_name(kv_given), model_json, rows, load_before, ctx_lens);
    return 0;
  }

  // The machine line, the rows, the trust warnings, where step time went, the summary; the JSON.
  // kv: the --kv-dtype asked for ("auto": each row's dtype's default, in its kv_dtype).
  void report(const BenchMachine& mach, const std::string& kv, const nlohmann::json& model_json,
              const std::vector<BenchRow>& rows, double load_before, const std::vector<int64_t>& ctx_lens) const {
    BenchReport report(steps);
    report.print_machine(mach, kv);
    for (const BenchRow& r : rows) report.print_row(r);
    report.print_trust(load_before);
    BenchReport::print_step_parts(rows);
    report.print_summary(rows, ctx_lens);
    if (!json_path.empty())
      report.write_json(
          json_path, mach, model_json,
          {{"warmup", warmup}, {"reps", reps}, {"decode_steps", steps}, {"quick", quick}, {"kv_dtype", kv}}, rows);
  }

  static std::string row_name(const char* phase, int64_t ctx, int64_t batch, Backend be, DType dt) {
    return std::string("rows: ") + phase + " ctx " + std::to_string(ctx) + " batch " + std::to_string(batch) + " " +
           backend_name(be) + " " + weight_dtype_name(dt);
  }
};

}  // namespace

std::unique_ptr<Command> make_bench() { return std::make_unique<BenchCommand>(); }

}  // namespace ordo::cli
