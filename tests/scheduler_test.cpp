// The Scheduler (continuous batching for a server): requests submitted from many threads get the
// ids generate() gives each alone; a full queue refuses; cancel and deadlines end a sequence.
#include "ordo/scheduler.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "ordo/ordo.hpp"

using namespace ordo;

namespace {

const Model& stories() {
  static const Model m = Model::load(std::string(ORDO_SOURCE_DIR) + "/models/stories260K");
  return m;
}

GenerateParams params_for(int i) {
  GenerateParams p;
  p.max_new_tokens = 12 + 3 * (i % 5);
  p.stop_ids = stories().spec().eos_ids;
  if (i % 3 == 2) {  // seeded sampling beside greedy requests
    p.sampling.temperature = 0.9f;
    p.sampling.top_k = 20;
    p.sampling.seed = 1000 + static_cast<uint64_t>(i);
  }
  return p;
}

// Submits and waits for the result.
ScheduledResult run_one(Scheduler& s, const std::vector<int32_t>& prompt, const GenerateParams& p) {
  std::promise<ScheduledResult> done;
  ScheduledRequest r;
  r.prompt = prompt;
  r.params = p;
  r.on_done = [&](ScheduledResult&& res) { done.set_value(std::move(res)); };
  EXPECT_NE(s.submit(std::move(r)), 0u);
  return done.get_future().get();
}

TEST(Scheduler, ConcurrentRequestsGetTheIdsTheyGetAlone) {
  const Model& m = stories();
  const char* texts[] = {
      "Once upon a time", "The cat",      "Lily went to the park and", "One day, a big", "Tom had a red ball", "She",
      "The sun was",      "A little bird"};
  std::vector<std::vector<int32_t>> prompts;
  std::vector<GenerateResult> alone;
  for (int i = 0; i < 16; ++i) {
    prompts.push_back(m.encode(texts[i % 8]));
    alone.push_back(generate(m.engine(), prompts.back(), params_for(i)));
  }
  Scheduler s(m.engine(), 4, 16);
  std::vector<ScheduledResult> got(16);
  std::vector<std::thread> clients;
  const auto started = std::chrono::steady_clock::now();
  for (int i = 0; i < 16; ++i) clients.emplace_back([&, i] { got[i] = run_one(s, prompts[i], params_for(i)); });
  for (auto& t : clients) t.join();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(got[i].generation.ids, alone[i].ids) << "request " << i;
    EXPECT_EQ(got[i].reason, alone[i].stopped_by_eos ? FinishReason::Stop : FinishReason::Length);
    EXPECT_EQ(got[i].generation.prompt_tokens, static_cast<int64_t>(prompts[i].size()));
  }
  const SchedulerStats st = s.stats();
  EXPECT_EQ(st.running, 0u);
  EXPECT_EQ(st.queued, 0u);
  EXPECT_LE(st.last_batch, 4u);
  EXPECT_GT(st.batched_sequences, st.steps);  // some steps ran several sequences
  EXPECT_GT(st.step_seconds, 0.0);
  EXPECT_LT(st.step_seconds, wall);  // the steps ran inside the clients' wait
}

// A 100-token request whose decode loop holds after its first token until release(): the state of a
// scheduler with one sequence mid-generation, for cancel() and stop().
namespace {
struct HeldRequest {
  std::promise<void> release_, first_token_;
  std::shared_future<void> go_ = release_.get_future().share();
  std::promise<ScheduledResult> done_;
  int tokens_ = 0;

  ScheduledRequest request(const Model& m) {
    ScheduledRequest r;
    r.prompt = m.encode("Once upon a time");
    r.params = params_for(0);
    r.params.max_new_tokens = 100;
    r.params.stop_ids.clear();
    r.on_token = [this](int32_t, const float*) {
      if (++tokens_ == 1) {
        first_token_.set_value();
        go_.wait();
      }
      return true;
    };
    r.on_done = [this](ScheduledResult&& res) { done_.set_value(std::move(res)); };
    return r;
  }
  void wait_first_token() { first_token_.get_future().wait(); }
  void release() { release_.set_value(); }
  ScheduledResult result() { return done_.get_future().get(); }
};
}  // namespace

TEST(Scheduler, FullQueueRefusesAndCancelEndsWithinOneStep) {
  const Model& m = stories();
  Scheduler s(m.engine(), 1, 0);
  HeldRequest held;
  const uint64_t id = s.submit(held.request(m));
  ASSERT_NE(id, 0u);
  held.wait_first_token();
  EXPECT_EQ(s.stats().running, 1u);
  ScheduledRequest extra;
  extra.prompt = {1};
  EXPECT_EQ(s.submit(std::move(extra)), 0u);  // one slot, taken, and no queue
  s.cancel(id);
  held.release();
  const ScheduledResult res = held.result();
  EXPECT_EQ(res.reason, FinishReason::Cancelled);
  EXPECT_LE(res.generation.ids.size(), 2u);  // at most the step already under way
  // The freed slot takes the next request.
  const ScheduledResult next = run_one(s, m.encode("The cat"), params_for(0));
  EXPECT_EQ(next.generation.ids, generate(m.engine(), m.encode("The cat"), params_for(0)).ids);
}

// stop(): what runs and what waits end Cancelled before the next step, and nothing new is taken.
TEST(Scheduler, StopCancelsRunningAndQueuedAndRefusesNew) {
  const Model& m = stories();
  Scheduler s(m.engine(), 1, 4);
  HeldRequest held;
  ASSERT_NE(s.submit(held.request(m)), 0u);
  held.wait_first_token();
  std::promise<ScheduledResult> done_queued;
  ScheduledRequest queued;
  queued.prompt = m.encode("The cat");
  queued.params = params_for(0);
  queued.on_done = [&](ScheduledResult&& res) { done_queued.set_value(std::move(res)); };
  ASSERT_NE(s.submit(std::move(queued)), 0u);
  s.stop();
  ScheduledRequest late;
  late.prompt = {1};
  EXPECT_EQ(s.submit(std::move(late)), 0u);
  held.release();
  const ScheduledResult a = held.result(), b = done_queued.get_future().get();
  EXPECT_EQ(a.reason, FinishReason::Cancelled);
  EXPECT_LE(a.generation.ids.size(), 2u);
  EXPECT_EQ(b.reason, FinishReason::Cancelled);
  EXPECT_TRUE(b.generation.ids.empty());
}

TEST(Scheduler, DeadlinesAndBadRequestsEndWithTheirReason) {
  const Model& m = stories();
  Scheduler s(m.engine(), 2, 4);
  GenerateParams p = params_for(0);
  std::promise<ScheduledResult> late;
  ScheduledRequest r;
  r.prompt = m.encode("The cat");
  r.params = p;
  r.deadline = std::chrono::steady_clock::now() - std::chrono::seconds(1);
  r.on_done = [&](ScheduledResult&& res) { late.set_value(std::move(res)); };
  ASSERT_NE(s.submit(std::move(r)), 0u);
  EXPECT_EQ(late.get_future().get().reason, FinishReason::Timeout);
  const ScheduledResult empty = run_one(s, {}, p);
  EXPECT_EQ(empty.reason, FinishReason::Error);
  EXPECT_NE(empty.error.find("prompt is empty"), std::string::npos) << empty.error;
  EXPECT_STREQ(finish_reason_name(FinishReason::Length), "length");
}

}  // namespace
