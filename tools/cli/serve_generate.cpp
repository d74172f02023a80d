// `ordo serve`'s generation routes: /v1/completions and /v1/chat/completions, answered whole or
// streamed as server-sent events, each request a sequence of the shared Scheduler.
#include <httplib.h>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <ctime>
#include <mutex>
#include <random>

#include "ordo/text_stream.hpp"
#include "serve.hpp"

namespace ordo::cli::serve {
namespace {

using json = nlohmann::json;
using clock = std::chrono::steady_clock;

// A request checked against the model: its prompt ids and generation settings.
struct Prepared {
  bool chat = false, stream = false, echo = false;
  std::vector<int32_t> prompt;
  std::string echo_text;
  GenerateParams params;
  std::vector<std::string> stop;
  std::vector<int32_t> hidden_ids;  // ids whose text is not shown (the stop ids)
  int64_t logprobs = -1;
};

// One token's log-probability and its top alternatives, under the model's raw distribution.
struct TokenLogprob {
  int32_t id = 0;
  double logprob = 0;
  std::vector<std::pair<int32_t, double>> top;
};

// Shared by the HTTP thread answering the request and the scheduler's thread generating it.
struct Job {
  std::mutex mu;
  std::condition_variable cv;
  std::string text;  // released text (stop strings cut)
  std::vector<int32_t> ids;
  std::vector<size_t> text_end;  // text.size() once ids[i] was pushed: each token's share of the text
  std::vector<TokenLogprob> logprobs;
  bool done = false;
  ScheduledResult result;
  uint64_t id = 0;  // the scheduler's
  // The HTTP thread's alone (streaming): what has been sent.
  size_t sent_text = 0, sent_ids = 0;
  bool sent_role = false;
};

TokenLogprob logprob_of(int32_t id, const float* logits, int64_t V, int64_t top) {
  const float mx = *std::max_element(logits, logits + V);
  double sum = 0;
  for (int64_t i = 0; i < V; ++i) sum += std::exp(static_cast<double>(logits[i]) - mx);
  const double lse = mx + std::log(sum);
  TokenLogprob t{id, logits[id] - lse, {}};
  std::vector<int32_t> order(static_cast<size_t>(V));
  for (int64_t i = 0; i < V; ++i) order[static_cast<size_t>(i)] = static_cast<int32_t>(i);
  const size_t k = static_cast<size_t>(std::min<int64_t>(top, V));
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(),
                    [&](int32_t a, int32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); });
  for (size_t i = 0; i < k; ++i) t.top.emplace_back(order[i], logits[order[i]] - lse);
  return t;
}

// A token as text for logprobs: its piece, SentencePiece's word marker shown as a space.
std::string piece(const Tokenizer* tok, int32_t id) {
  if (!tok) return std::to_string(id);  // a directory without a tokenizer: ids only
  std::string p = tok->id_to_piece(id);
  for (size_t at; (at = p.find("\xE2\x96\x81")) != std::string::npos;) p.replace(at, 3, " ");
  return p;
}

json logprobs_json(const State& s, const std::vector<TokenLogprob>& lps, bool chat) {
  const Tokenizer* tok = s.model->has_tokenizer() ? &s.model->tokenizer() : nullptr;
  if (chat) {
    json content = json::array();
    for (const TokenLogprob& t : lps) {
      json top = json::array();
      for (const auto& [id, lp] : t.top) top.push_back({{"token", piece(tok, id)}, {"logprob", lp}});
      content.push_back({{"token", piece(tok, t.id)}, {"logprob", t.logprob}, {"top_logprobs", top}});
    }
    return {{"content", content}};
  }
  json tokens = json::array(), token_logprobs = json::array(), top_logprobs = json::array();
  for (const TokenLogprob& t : lps) {
    tokens.push_back(piece(tok, t.id));
    token_logprobs.push_back(t.logprob);
    json top = json::object();
    for (const auto& [id, lp] : t.top) top[piece(tok, id)] = lp;
    top_logprobs.push_back(top);
  }
  return {{"tokens", tokens}, {"token_logprobs", token_logprobs}, {"top_logprobs", top_logprobs}};
}

void fill_sampling(const State& s, const SamplingRequest& r, Prepared& p) {
  GenerateParams& g = p.params;
  g = s.defaults;  // penalties, bans and length rules of the model's generation_config.json too
  SamplingParams& sp = g.sampling;
  if (r.temperature) sp.temperature = static_cast<float>(*r.temperature);
  if (r.top_p) sp.top_p = static_cast<float>(*r.top_p);
  if (r.top_k) sp.top_k = static_cast<int>(*r.top_k);
  if (r.min_p) sp.min_p = static_cast<float>(*r.min_p);
  if (r.repetition_penalty) sp.repetition_penalty = static_cast<float>(*r.repetition_penalty);
  sp.seed = r.seed ? *r.seed : std::random_device{}();
  const int64_t prompt = static_cast<int64_t>(p.prompt.size());
  if (prompt == 0) throw invalid("the prompt is empty (no tokens)", p.chat ? "messages" : "prompt");
  const int64_t max_tokens =
      r.max_tokens ? *r.max_tokens : std::max<int64_t>(0, std::min<int64_t>(g.max_new_tokens, s.context - prompt));
  if (prompt + max_tokens > s.context)
    throw invalid("the prompt (" + std::to_string(prompt) + " tokens) + max_tokens (" + std::to_string(max_tokens) +
                      ") = " + std::to_string(prompt + max_tokens) + " exceeds the context limit of " +
                      std::to_string(s.context) + " tokens",
                  r.max_tokens ? "max_tokens" : "prompt");
  g.max_new_tokens = static_cast<int>(max_tokens);
  g.max_length = 0;
  g.beams = BeamParams{};  // one sequence per request (the scheduler runs no beam search)
  p.stop = r.stop.empty() ? s.defaults.stop_strings : r.stop;
  p.stream = r.stream;
  p.logprobs = r.logprobs;
  p.hidden_ids = s.defaults.stop_ids.empty() ? s.model->spec().eos_ids : s.defaults.stop_ids;
  if (p.chat)
    for (int32_t id : s.model->chat_stop_ids())
      if (std::find(p.hidden_ids.begin(), p.hidden_ids.end(), id) == p.hidden_ids.end()) p.hidden_ids.push_back(id);
  g.stop_ids = r.ignore_eos ? std::vector<int32_t>{} : p.hidden_ids;
}

Prepared prepare(const State& s, const json& body, bool chat) {
  const Model& m = *s.model;
  if (m.spec().graph != GraphKind::Decoder)
    throw invalid(m.spec().architecture + " is not a decoder-only model: ordo serve generates with decoders only");
  Prepared p;
  p.chat = chat;
  if (chat) {
    const ChatRequest r = parse_chat(body);
    if (!m.has_chat_template()) (void)m.chat_template();  // the Error naming the missing template
    try {
      p.prompt = m.encode_chat(r.messages, true);
    } catch (const Error& e) {
      throw invalid(std::string("chat template: ") + e.what(), "messages");
    }
    fill_sampling(s, r, p);
    return p;
  }
  const CompletionRequest r = parse_completion(body);
  if (r.prompt_text) {
    p.prompt = m.encode(*r.prompt_text, true);
    p.echo_text = *r.prompt_text;
  } else {
    for (int32_t id : r.prompt_ids)
      if (id >= m.spec().vocab_size)
        throw invalid("'prompt': token id " + std::to_string(id) + " is outside the vocabulary (" +
                          std::to_string(m.spec().vocab_size) + " tokens)",
                      "prompt");
    p.prompt = r.prompt_ids;
    if (r.echo) p.echo_text = m.decode(p.prompt);
  }
  p.echo = r.echo;
  fill_sampling(s, r, p);
  return p;
}

// Submits p; the job fills as tokens come. ApiError 503 (with Retry-After set by the caller) when
// the queue is full.
std::shared_ptr<Job> submit(State& s, const Prepared& p, clock::time_point received) {
  auto job = std::make_shared<Job>();
  // Without a tokenizer (ids in, ids out) the answers' text stays empty.
  auto text = !s.model->has_tokenizer()
                  ? nullptr
                  : std::make_shared<TextStream>(
                        s.model->tokenizer(), p.chat ? std::vector<int32_t>{} : p.prompt, p.stop, p.hidden_ids,
                        [job](const std::string& piece) {
                          std::lock_guard<std::mutex> lk(job->mu);
                          job->text += piece;
                          return true;
                        },
                        p.chat);
  ScheduledRequest r;
  r.prompt = p.prompt;
  r.params = p.params;
  r.want_logits = p.logprobs >= 0;
  if (!p.stream)
    r.deadline = received + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(s.opt.timeout));
  const int64_t V = s.model->spec().vocab_size, top = p.logprobs;
  Metrics* metrics = &s.metrics;
  r.on_token = [job, text, V, top, received, metrics](int32_t id, const float* logits) {
    TokenLogprob lp;
    if (logits) lp = logprob_of(id, logits, V, top);
    const bool more = !text || text->push(id);
    std::lock_guard<std::mutex> lk(job->mu);
    if (job->ids.empty()) metrics->observe_ttft(std::chrono::duration<double>(clock::now() - received).count());
    job->ids.push_back(id);
    job->text_end.push_back(job->text.size());
    if (logits) job->logprobs.push_back(std::move(lp));
    job->cv.notify_all();
    return more;
  };
  r.on_done = [job, text, metrics](ScheduledResult&& res) {
    if (text && (res.reason == FinishReason::Stop || res.reason == FinishReason::Length)) text->finish();
    metrics->count_finish(finish_reason_name(res.reason));
    std::lock_guard<std::mutex> lk(job->mu);
    job->result = std::move(res);
    job->done = true;
    job->cv.notify_all();
  };
  job->id = s.scheduler->submit(std::move(r));
  if (job->id == 0)
    throw ApiError(503, "unavailable_error",
                   "the server is busy: " + std::to_string(s.opt.parallel) + " sequences in flight and " +
                       std::to_string(s.opt.queue) + " waiting (--parallel, --queue); retry later");
  return job;
}

// The error a finished job's reason stands for (none for stop and length).
std::optional<ApiError> failure(const ScheduledResult& r, const State& s) {
  switch (r.reason) {
    case FinishReason::Stop:
    case FinishReason::Length: return std::nullopt;
    case FinishReason::Timeout:
      return ApiError(504, "timeout_error",
                      "the request did not finish within " + json(s.opt.timeout).dump() + " s (--timeout)");
    case FinishReason::Cancelled: return ApiError(503, "unavailable_error", "the request was cancelled");
    case FinishReason::Error: break;
  }
  return ApiError(500, "server_error", r.error);
}

json usage_json(const Prepared& p, size_t generated) {
  const int64_t prompt = static_cast<int64_t>(p.prompt.size()), n = static_cast<int64_t>(generated);
  return {{"prompt_tokens", prompt}, {"completion_tokens", n}, {"total_tokens", prompt + n}};
}

json envelope(const State& s, const Prepared& p, uint64_t serial, bool chunk) {
  return {{"id", std::string(p.chat ? "chatcmpl-" : "cmpl-") + std::to_string(serial)},
          {"object", p.chat ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion"},
          {"created", static_cast<int64_t>(std::time(nullptr))},
          {"model", s.model_id}};
}

// The whole answer of a finished job (the caller holds no lock: the job is done).
json full_answer(const State& s, const Prepared& p, const Job& job, uint64_t serial) {
  json a = envelope(s, p, serial, false);
  const std::string finish = finish_reason_name(job.result.reason);
  json choice = {{"index", 0}, {"finish_reason", finish}, {"token_ids", job.ids}};
  choice["logprobs"] = p.logprobs >= 0 ? logprobs_json(s, job.logprobs, p.chat) : json(nullptr);
  if (p.chat)
    choice["message"] = {{"role", "assistant"}, {"content", job.text}};
  else
    choice["text"] = (p.echo ? p.echo_text : std::string()) + job.text;
  a["choices"] = json::array({choice});
  a["usage"] = usage_json(p, job.ids.size());
  return a;
}

// The next SSE event of a streaming job, or "" when there is nothing new yet. Lock held.
// The next SSE event: one per token, as OpenAI's and llama.cpp's servers send them, however far the
// writer fell behind; the last also carries finish_reason and usage, then [DONE]. Empty: nothing yet.
std::string next_event(const State& s, const Prepared& p, Job& job, uint64_t serial) {
  const bool pending = job.ids.size() > job.sent_ids;
  if (!pending && !job.done && job.sent_role) return {};
  if (job.done)
    if (auto err = failure(job.result, s))
      return "data: " + error_body(err->what(), err->type, err->param, err->status) + "\n\ndata: [DONE]\n\n";
  const bool last = job.done && job.ids.size() <= job.sent_ids + 1;
  const size_t text_to = last ? job.text.size() : pending ? job.text_end[job.sent_ids] : job.sent_text;
  const size_t n = pending ? 1 : 0;
  json chunk = envelope(s, p, serial, true);
  std::string piece = job.text.substr(job.sent_text, text_to - job.sent_text);
  if (!job.sent_role && p.echo) piece = p.echo_text + piece;
  const std::vector<int32_t> ids(job.ids.begin() + static_cast<std::ptrdiff_t>(job.sent_ids),
                                 job.ids.begin() + static_cast<std::ptrdiff_t>(job.sent_ids + n));
  json choice = {{"index", 0}, {"token_ids", ids}};
  choice["finish_reason"] = last ? json(finish_reason_name(job.result.reason)) : json(nullptr);
  if (p.logprobs >= 0) {
    const std::vector<TokenLogprob> lps(job.logprobs.begin() + static_cast<std::ptrdiff_t>(job.sent_ids),
                                        job.logprobs.begin() + static_cast<std::ptrdiff_t>(job.sent_ids + n));
    choice["logprobs"] = logprobs_json(s, lps, p.chat);
  } else {
    choice["logprobs"] = nullptr;
  }
  if (p.chat) {
    choice["delta"] = {{"content", piece}};
    if (!job.sent_role) choice["delta"]["role"] = "assistant";
  } else {
    choice["text"] = piece;
  }
  chunk["choices"] = json::array({choice});
  if (last) chunk["usage"] = usage_json(p, job.ids.size());
  job.sent_text = text_to;
  job.sent_ids += n;
  job.sent_role = true;
  return "data: " + chunk.dump(-1, ' ', false, json::error_handler_t::replace) + "\n\n" +
         (last ? "data: [DONE]\n\n" : "");
}

void stream_answer(httplib::Response& res, State& s, const Prepared& p, std::shared_ptr<Job> job,
                   clock::time_point received, uint64_t serial) {
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream",
      [&s, p, job, received, serial](size_t, httplib::DataSink& sink) {
        std::unique_lock<std::mutex> lk(job->mu);
        job->cv.wait_for(lk, std::chrono::milliseconds(500), [&] {
          return job->done || job->text.size() > job->sent_text || job->ids.size() > job->sent_ids;
        });
        std::string event = next_event(s, p, *job, serial);
        const bool done = event.size() >= 14 && event.compare(event.size() - 14, 14, "data: [DONE]\n\n") == 0;
        lk.unlock();
        // An SSE comment while waiting: a client gone is found by the write failing.
        if (event.empty()) event = ": waiting\n\n";
        if (!sink.write(event.data(), event.size())) {
          s.scheduler->cancel(job->id);
          return false;
        }
        if (done) {
          s.metrics.observe_latency(std::chrono::duration<double>(clock::now() - received).count());
          sink.done();
        }
        return true;
      },
      [&s, job](bool success) {
        if (!success) s.scheduler->cancel(job->id);
      });
}

}  // namespace

void handle_generation(const httplib::Request& req, httplib::Response& res, State& s, bool chat) {
  const clock::time_point received = clock::now();
  const Prepared p = prepare(s, parse_body(req.body), chat);
  std::shared_ptr<Job> job;
  try {
    job = submit(s, p, received);
  } catch (const ApiError& e) {
    res.set_header("Retry-After", "1");
    throw;
  }
  const uint64_t serial = s.next_id++;
  if (p.stream) return stream_answer(res, s, p, std::move(job), received, serial);
  std::unique_lock<std::mutex> lk(job->mu);
  job->cv.wait(lk, [&] { return job->done; });
  lk.unlock();
  if (auto err = failure(job->result, s)) throw *err;
  reply(res, 200, full_answer(s, p, *job, serial).dump(-1, ' ', false, json::error_handler_t::replace));
  s.metrics.observe_latency(std::chrono::duration<double>(clock::now() - received).count());
}

}  // namespace ordo::cli::serve
