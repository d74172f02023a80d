// Continuous batching for requests that arrive at any time (a server): a bounded queue feeding one
// decode loop on its own thread, up to max_batch sequences per step.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ordo/generate.hpp"

namespace ordo {

// How a scheduled generation ended.
enum class FinishReason {
  Stop,       // a stop id, or on_token returned false (a stop string)
  Length,     // max_new_tokens generated
  Cancelled,  // cancel() or the Scheduler's destruction
  Timeout,    // the deadline passed (queued or running)
  Error,      // the request or the step failed: ScheduledResult::error says why
};
const char* finish_reason_name(FinishReason r);  // "stop", "length", "cancelled", "timeout", "error"

struct ScheduledResult {
  GenerateResult generation;
  FinishReason reason = FinishReason::Stop;
  std::string error;  // FinishReason::Error: the message
};

// One request for the Scheduler: generate()'s arguments (decoder-only) and its callbacks, called
// on the scheduler's thread.
struct ScheduledRequest {
  std::vector<int32_t> prompt;
  GenerateParams params;  // beam search is not supported (num_beams must be 1)
  // Each generated id, with the step's raw logits row [V] (before penalties and sampling) when
  // want_logits; return false to end the sequence there (FinishReason::Stop).
  std::function<bool(int32_t id, const float* logits)> on_token;
  bool want_logits = false;
  // Called exactly once, after the last on_token.
  std::function<void(ScheduledResult&&)> on_done;
  // Past it the request ends with FinishReason::Timeout (max(): none).
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
};

// What the scheduler is doing, for metrics.
struct SchedulerStats {
  size_t queued = 0, running = 0;  // running: slots taken (started, on_done not yet called)
  uint64_t steps = 0;              // decode steps run
  double step_seconds = 0;         // wall time inside those steps (the rest of the loop: admitting, waiting)
  uint64_t batched_sequences = 0;  // sum over steps of the sequences in the step
  uint64_t prompt_tokens = 0, generated_tokens = 0;
  size_t last_batch = 0;  // sequences in the latest step
};

// Requests join the running batch between decode steps (Transformer::decode_batch, prompts run as
// alone), so every sequence gets the ids generate() gives it alone: greedy and seeded sampling
// (each request has its own Sampler) alike, whatever else is in flight.
class Scheduler {
 public:
  // max_batch: sequences in one step (>= 1); max_queue: requests waiting beyond them (>= 0).
  Scheduler(const Transformer& model, int max_batch, size_t max_queue);
  ~Scheduler();  // cancels everything queued or running (on_done is still called) and joins
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Queues the request; returns its id (> 0), or 0 when the queue is full (on_done is not called).
  uint64_t submit(ScheduledRequest request);
  // Ends request `id` before the next step (FinishReason::Cancelled); a finished id is ignored.
  void cancel(uint64_t id);
  // Refuses new requests (submit returns 0) and cancels everything queued or running before the next
  // step; returns at once (on_done runs on the scheduler's thread). For a server shutting down.
  void stop();
  SchedulerStats stats() const;

 private:
  struct Live;
  void loop();
  bool admit(std::vector<std::unique_ptr<Live>>& live);
  void step(std::vector<std::unique_ptr<Live>>& live);

  const Transformer& model_;
  const int max_batch_;
  const size_t max_queue_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::deque<std::pair<uint64_t, ScheduledRequest>> queue_;
  std::vector<uint64_t> cancelled_;
  uint64_t next_id_ = 1;
  bool stopping_ = false;
  SchedulerStats stats_;
  std::thread thread_;
};

}  // namespace ordo
