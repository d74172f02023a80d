// `ordo serve`'s metrics: counters and histograms under one lock, and their Prometheus text.
#include "serve_metrics.hpp"

#include <cstdio>

namespace ordo::cli::serve {
namespace {

constexpr double kBuckets[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
constexpr size_t kNumBuckets = sizeof kBuckets / sizeof kBuckets[0];

std::string num(double v) {
  char b[40];
  std::snprintf(b, sizeof b, "%.9g", v);
  return b;
}

void metric(std::string& out, const char* name, const char* type, const char* help) {
  out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

}  // namespace

void Metrics::count_request(const std::string& route, int status) {
  std::lock_guard<std::mutex> lk(mu_);
  ++requests_[{route, status}];
}

void Metrics::count_finish(const std::string& reason) {
  std::lock_guard<std::mutex> lk(mu_);
  ++finished_[reason];
}

void Metrics::observe(Histogram& h, double seconds) {
  if (h.counts.empty()) h.counts.assign(kNumBuckets + 1, 0);
  size_t b = 0;
  while (b < kNumBuckets && seconds > kBuckets[b]) ++b;
  ++h.counts[b];
  h.sum += seconds;
  ++h.n;
}

void Metrics::observe_latency(double seconds) {
  std::lock_guard<std::mutex> lk(mu_);
  observe(latency_, seconds);
}

void Metrics::observe_ttft(double seconds) {
  std::lock_guard<std::mutex> lk(mu_);
  observe(ttft_, seconds);
}

void Metrics::write(std::string& out, const char* name, const char* help, const Histogram& h) {
  metric(out, name, "histogram", help);
  uint64_t acc = 0;
  for (size_t b = 0; b <= kNumBuckets; ++b) {
    acc += h.counts.empty() ? 0 : h.counts[b];
    out += std::string(name) + "_bucket{le=\"" + (b < kNumBuckets ? num(kBuckets[b]) : "+Inf") + "\"} " +
           std::to_string(acc) + "\n";
  }
  out += std::string(name) + "_sum " + num(h.sum) + "\n" + name + "_count " + std::to_string(h.n) + "\n";
}

std::string Metrics::text(const SchedulerStats& s, bool ready) const {
  std::lock_guard<std::mutex> lk(mu_);
  std::string out;
  metric(out, "ordo_ready", "gauge", "1 once the model is loaded");
  out += "ordo_ready " + std::string(ready ? "1" : "0") + "\n";
  metric(out, "ordo_http_requests_total", "counter", "HTTP requests answered, by route and status");
  for (const auto& [key, n] : requests_)
    out += "ordo_http_requests_total{route=\"" + key.first + "\",status=\"" + std::to_string(key.second) + "\"} " +
           std::to_string(n) + "\n";
  metric(out, "ordo_generations_finished_total", "counter", "Generations ended, by reason");
  for (const auto& [reason, n] : finished_)
    out += "ordo_generations_finished_total{reason=\"" + reason + "\"} " + std::to_string(n) + "\n";
  metric(out, "ordo_prompt_tokens_total", "counter", "Prompt tokens prefilled");
  out += "ordo_prompt_tokens_total " + std::to_string(s.prompt_tokens) + "\n";
  metric(out, "ordo_generated_tokens_total", "counter", "Tokens generated");
  out += "ordo_generated_tokens_total " + std::to_string(s.generated_tokens) + "\n";
  metric(out, "ordo_decode_steps_total", "counter", "Batched decode steps run");
  out += "ordo_decode_steps_total " + std::to_string(s.steps) + "\n";
  metric(out, "ordo_decode_step_seconds_total", "counter", "Wall time inside the batched decode steps");
  out += "ordo_decode_step_seconds_total " + num(s.step_seconds) + "\n";
  metric(out, "ordo_batched_sequences_total", "counter", "Sum over steps of the sequences in each step");
  out += "ordo_batched_sequences_total " + std::to_string(s.batched_sequences) + "\n";
  metric(out, "ordo_queue_depth", "gauge", "Requests waiting for a slot");
  out += "ordo_queue_depth " + std::to_string(s.queued) + "\n";
  metric(out, "ordo_requests_running", "gauge", "Sequences in flight");
  out += "ordo_requests_running " + std::to_string(s.running) + "\n";
  metric(out, "ordo_batch_size", "gauge", "Sequences in the latest decode step");
  out += "ordo_batch_size " + std::to_string(s.last_batch) + "\n";
  write(out, "ordo_request_duration_seconds", "Generation requests: received to answered", latency_);
  write(out, "ordo_time_to_first_token_seconds", "Generation requests: received to first token", ttft_);
  return out;
}

}  // namespace ordo::cli::serve
