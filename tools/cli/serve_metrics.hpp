// `ordo serve`'s counters and latency histograms, written as Prometheus text for GET /metrics.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "ordo/scheduler.hpp"

namespace ordo::cli::serve {

class Metrics {
 public:
  // One answered request: its route and HTTP status.
  void count_request(const std::string& route, int status);
  // One generation ended (FinishReason name, or "client_gone" for a disconnect).
  void count_finish(const std::string& reason);
  void observe_latency(double seconds);  // request received → last byte of the answer ready
  void observe_ttft(double seconds);     // request received → first generated token
  // The whole exposition: these plus the scheduler's gauges and counters.
  std::string text(const SchedulerStats& s, bool ready) const;

 private:
  struct Histogram {
    std::vector<uint64_t> counts;  // per bucket of kBuckets, then +Inf
    double sum = 0;
    uint64_t n = 0;
  };
  static void observe(Histogram& h, double seconds);
  static void write(std::string& out, const char* name, const char* help, const Histogram& h);

  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;
  std::map<std::string, uint64_t> finished_;
  Histogram latency_, ttft_;
};

}  // namespace ordo::cli::serve
