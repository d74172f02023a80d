// The Scheduler: a request queue feeding Transformer::decode_batch one step at a time (a server's
// continuous batching); each sequence advanced as generate_batch advances it.
#include "ordo/scheduler.hpp"

#include <algorithm>
#include <cstring>

#include "generate_internal.hpp"
#include "ordo/finite.hpp"

namespace ordo {

const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::Stop: return "stop";
    case FinishReason::Length: return "length";
    case FinishReason::Cancelled: return "cancelled";
    case FinishReason::Timeout: return "timeout";
    case FinishReason::Error: return "error";
  }
  return "error";
}

// A sequence in flight.
struct Scheduler::Live {
  // Checks and plans the request before taking it: when this throws, r is still the caller's
  // (its on_done reports the error).
  Live(const Transformer& model, uint64_t id_, ScheduledRequest& r)
      : id(id_), gen{r.prompt, r.params, nullptr, {}}, sampler(r.params.sampling) {
    if (gen.params.beams.num_beams > 1) throw Error("the scheduler does not run beam search (num_beams must be 1)");
    const detail::RequestPlan plan = detail::plan_request(model, gen, 0);
    seq = detail::fresh_sequence(model, plan.capacity, nullptr, {});
    max_new_tokens = plan.max_new_tokens;
    history = r.prompt;
    feed = r.prompt;
    res.generation.prompt_tokens = static_cast<int64_t>(r.prompt.size());
    req = std::move(r);
  }
  uint64_t id;
  ScheduledRequest req;
  GenerateRequest gen;
  Sequence seq;
  Sampler sampler;
  ScheduledResult res;
  std::vector<int32_t> history, feed;
  int max_new_tokens = 0;
  bool prefilled = false, cancelled = false, done = false;
};

namespace {

// Calls on_done once; the caller's exceptions stay out of the decode loop.
void deliver(ScheduledRequest& req, ScheduledResult&& res) {
  if (!req.on_done) return;
  try {
    req.on_done(std::move(res));
  } catch (...) {
  }
}

void finish(ScheduledRequest& req, ScheduledResult&& res, FinishReason reason, std::string error = {}) {
  res.reason = reason;
  res.error = std::move(error);
  deliver(req, std::move(res));
}

}  // namespace

Scheduler::Scheduler(const Transformer& model, int max_batch, size_t max_queue)
    : model_(model), max_batch_(max_batch), max_queue_(max_queue) {
  if (max_batch < 1) throw Error("scheduler: max_batch must be >= 1, got " + std::to_string(max_batch));
  thread_ = std::thread([this] { loop(); });
}

Scheduler::~Scheduler() {
  stop();
  thread_.join();
}

void Scheduler::stop() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
}

uint64_t Scheduler::submit(ScheduledRequest request) {
  uint64_t id = 0;
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (stopping_) return 0;
    // Room for max_batch - running to start at the next step, and max_queue beyond them.
    const size_t free_slots =
        static_cast<size_t>(max_batch_) - std::min(stats_.running, static_cast<size_t>(max_batch_));
    if (queue_.size() >= max_queue_ + free_slots) return 0;
    id = next_id_++;
    queue_.emplace_back(id, std::move(request));
    stats_.queued = queue_.size();
  }
  wake_.notify_all();
  return id;
}

void Scheduler::cancel(uint64_t id) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    cancelled_.push_back(id);
  }
  wake_.notify_all();
}

SchedulerStats Scheduler::stats() const {
  std::lock_guard<std::mutex> lk(mu_);
  return stats_;
}

void Scheduler::loop() {
  std::vector<std::unique_ptr<Live>> live;
  // admit() returns false once stopping, everything in flight cancelled.
  while (admit(live))
    if (!live.empty()) step(live);
}

// Between steps: takes cancellations, drops what is cancelled or past its deadline, and starts
// queued requests while there is room. Blocks while there is nothing to run. False once stopping.
bool Scheduler::admit(std::vector<std::unique_ptr<Live>>& live) {
  std::vector<std::pair<uint64_t, ScheduledRequest>> starting, dropped;
  bool stopping = false;
  {
    std::unique_lock<std::mutex> lk(mu_);
    wake_.wait(lk, [&] { return stopping_ || !queue_.empty() || !live.empty(); });
    const auto is_cancelled = [&](uint64_t id) {
      return stopping_ || std::find(cancelled_.begin(), cancelled_.end(), id) != cancelled_.end();
    };
    for (auto& l : live)
      if (is_cancelled(l->id)) l->cancelled = true;
    const auto now = std::chrono::steady_clock::now();
    for (auto it = queue_.begin(); it != queue_.end();) {
      if (is_cancelled(it->first) || now >= it->second.deadline) {
        dropped.push_back(std::move(*it));
        it = queue_.erase(it);
      } else {
        ++it;
      }
    }
    cancelled_.clear();
    stopping = stopping_;
    while (live.size() + starting.size() < static_cast<size_t>(max_batch_) && !queue_.empty()) {
      starting.push_back(std::move(queue_.front()));
      queue_.pop_front();
      // A slot is taken from here until on_done, and given back before on_done runs: a request
      // submitted from on_done (or right after it) finds the slot free.
      ++stats_.running;
      ScheduledRequest& r = starting.back().second;
      r.on_done = [this, done = std::move(r.on_done)](ScheduledResult&& res) {
        {
          std::lock_guard<std::mutex> lk(mu_);
          --stats_.running;
        }
        if (done) done(std::move(res));
      };
    }
    stats_.queued = queue_.size();
  }
  const auto now = std::chrono::steady_clock::now();
  for (auto& d : dropped)
    finish(d.second, {}, now >= d.second.deadline ? FinishReason::Timeout : FinishReason::Cancelled);
  for (auto& s : starting) {
    try {
      live.push_back(std::make_unique<Live>(model_, s.first, s.second));
    } catch (const std::exception& e) {
      finish(s.second, {}, FinishReason::Error, e.what());
    }
  }
  for (auto& l : live) {
    if (l->cancelled)
      finish(l->req, std::move(l->res), FinishReason::Cancelled);
    else if (now >= l->req.deadline)
      finish(l->req, std::move(l->res), FinishReason::Timeout);
    else
      continue;
    l->done = true;
  }
  live.erase(std::remove_if(live.begin(), live.end(), [](const auto& l) { return l->done; }), live.end());
  return !stopping;
}

namespace {

// After a step: samples l's next token from its logits row (as generate_batch's advance) and sets
// its next feed. Returns false when the sequence is finished (reason set).
bool advance(const Transformer& model, ScheduledRequest& req, const GenerateParams& p, Sampler& sampler,
             ScheduledResult& res, std::vector<int32_t>& history, std::vector<int32_t>& feed, Sequence& seq,
             int max_new_tokens, float* logits) {
  const int64_t V = model.spec().vocab_size;
  if (max_new_tokens == 0) {
    finish(req, std::move(res), FinishReason::Length);
    return false;
  }
  std::vector<float> raw;
  if (req.want_logits) raw.assign(logits, logits + V);
  check_finite_row(logits, V, static_cast<int64_t>(history.size()) - 1);
  apply_penalties(logits, V, history, p.sampling);
  detail::apply_length_rules(logits, V, p, static_cast<int64_t>(req.prompt.size()),
                             static_cast<int64_t>(res.generation.ids.size()), max_new_tokens);
  const int32_t id = sampler.pick(logits, V);
  res.generation.ids.push_back(id);
  history.push_back(id);
  const bool is_stop = std::find(p.stop_ids.begin(), p.stop_ids.end(), id) != p.stop_ids.end();
  if (req.on_token && !req.on_token(id, raw.empty() ? nullptr : raw.data())) {
    finish(req, std::move(res), FinishReason::Stop);
    return false;
  }
  if (is_stop) {
    res.generation.stopped_by_eos = true;
    finish(req, std::move(res), FinishReason::Stop);
    return false;
  }
  if (static_cast<int>(res.generation.ids.size()) == max_new_tokens) {
    finish(req, std::move(res), FinishReason::Length);
    return false;
  }
  if (detail::needs_refeed(model, p, static_cast<int64_t>(history.size()))) {
    seq = detail::fresh_sequence(model, seq.self.capacity, nullptr, {});
    feed = history;
  } else {
    feed.assign(1, id);
  }
  return true;
}

}  // namespace

// One decode_batch over every sequence in flight, then each one's next token.
void Scheduler::step(std::vector<std::unique_ptr<Live>>& live) {
  using clock = std::chrono::steady_clock;
  std::vector<DecodeRequest> reqs(live.size());
  uint64_t prompt_tokens = 0, generated = 0;
  for (size_t i = 0; i < live.size(); ++i) {
    if (!live[i]->prefilled) prompt_tokens += live[i]->feed.size();
    reqs[i].seq = &live[i]->seq;
    reqs[i].ids.swap(live[i]->feed);
    reqs[i].which = LogitsFor::Last;
  }
  const auto t0 = clock::now();
  std::vector<ForwardOutput> out;
  try {
    out = model_.decode_batch(reqs);
  } catch (const std::exception& e) {
    for (auto& l : live) finish(l->req, std::move(l->res), FinishReason::Error, e.what());
    live.clear();
    return;
  }
  const double seconds = std::chrono::duration<double>(clock::now() - t0).count();
  const size_t batch = live.size();
  for (size_t i = 0; i < live.size(); ++i) {
    Live& l = *live[i];
    GenerateResult& g = l.res.generation;
    (l.prefilled ? g.decode_seconds : g.prefill_seconds) += seconds;
    l.prefilled = true;
    const size_t before = l.history.size();  // l.res may be moved out below
    try {
      l.done = !advance(model_, l.req, l.gen.params, l.sampler, l.res, l.history, l.feed, l.seq, l.max_new_tokens,
                        out[i].logits.f32());
    } catch (const std::exception& e) {
      finish(l.req, std::move(l.res), FinishReason::Error, e.what());
      l.done = true;
    }
    generated += l.history.size() - before;
  }
  live.erase(std::remove_if(live.begin(), live.end(), [](const auto& l) { return l->done; }), live.end());
  std::lock_guard<std::mutex> lk(mu_);
  stats_.steps += 1;
  stats_.step_seconds += seconds;
  stats_.batched_sequences += batch;
  stats_.last_batch = batch;
  stats_.prompt_tokens += prompt_tokens;
  stats_.generated_tokens += generated;
}

}  // namespace ordo
