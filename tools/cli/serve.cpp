// ordo serve: an OpenAI-compatible HTTP server (cpp-httplib) over one model, its generations
// continuously batched by a Scheduler. Loopback by default; the port is open (GET /health: 503)
// while the model loads.
#include "serve.hpp"

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <thread>

#include "common.hpp"
#include "generation_args.hpp"

namespace ordo::cli {
namespace {

httplib::Server* g_http = nullptr;
volatile std::sig_atomic_t g_signalled = 0;

// SIGINT/SIGTERM: stop accepting; run() then cancels what is in flight.
void on_signal(int) {
  g_signalled = 1;
  if (g_http) g_http->stop();
}

struct ServeCommand : Command {
  ModelArgs model;
  GenerationArgs gen;
  serve::Options opt;
  bool quiet = false;

  CLI::App* add(CLI::App& app) override {
    CLI::App* c = app.add_subcommand("serve", "Serve the model over HTTP with OpenAI's API (continuous batching)");
    model.add(c);
    c->add_option("--host", opt.host, "Address to listen on (a non-loopback address exposes the server)")
        ->capture_default_str();
    c->add_option("--port", opt.port, "TCP port (0: any free one, printed on stderr)")->capture_default_str();
    c->add_option("--parallel", opt.parallel, "Sequences generated at once (the batch of each step)")
        ->capture_default_str();
    c->add_option("--queue", opt.queue, "Requests waiting beyond --parallel; past it 503 with Retry-After")
        ->capture_default_str();
    c->add_option("--api-key", opt.api_key, "Require 'Authorization: Bearer KEY' (all routes but /health)");
    c->add_option("--timeout", opt.timeout, "Seconds a non-streaming generation may take (504 past it)")
        ->capture_default_str();
    c->add_option("--max-body", opt.max_body, "Largest request body in bytes (413 past it)")->capture_default_str();
    c->add_option("--http-threads", opt.http_threads, "Connections served at once (0: parallel + queue + 4)")
        ->capture_default_str();
    gen.add(c, false);
    c->add_flag("-q,--quiet", quiet, "No settings line on stderr");
    c->footer(
        "Routes: POST /v1/completions, /v1/chat/completions, /v1/embeddings, /tokenize, /detokenize; GET "
        "/v1/models, /health, /metrics. Generation flags set the defaults of what a request leaves unset.");
    return c;
  }

  void validate() const override {
    model.validate();
    gen.validate();
    check_flag_range("--port", opt.port, 0, 65535);
    check_flag_range("--parallel", opt.parallel, 1, 1024);
    check_flag_range("--queue", opt.queue, 0, 65536);
    check_flag_range("--http-threads", opt.http_threads, 0, 4096);
    check_flag_range("--timeout", opt.timeout, 0.001, 1e7);
    check_flag_range("--max-body", static_cast<double>(opt.max_body), 1024, 1 << 30);
    if (opt.host.empty()) throw Error("--host must not be empty");
  }

  // Whether the directory holds tokenizer files (load_tokenizer's): without them the server
  // takes and gives token ids only (a random-weight benchmark model).
  static bool has_tokenizer_files(const std::string& dir) {
    for (const char* f : {"tokenizer.model", "spiece.model", "tokenizer.json", "vocab.json", "vocab.txt"})
      if (std::filesystem::exists(std::filesystem::path(dir) / f)) return true;
    return false;
  }

  void load(serve::State& s) const {
    s.model = std::make_unique<Model>(model.load(has_tokenizer_files(model.resolved_dir())));
    const Model& m = *s.model;
    const int64_t trained = m.spec().position.max_positions;
    s.context = model.max_context > 0 ? model.max_context : trained > 0 ? trained : m.engine().context_limit();
    s.defaults = gen.params(m, quiet);
    s.scheduler = std::make_unique<Scheduler>(m.engine(), opt.parallel, static_cast<size_t>(opt.queue));
    s.ready = true;
  }

  int run() override {
    validate();
    serve::State s;
    s.opt = opt;
    s.model_id = std::filesystem::path(model.resolved_dir()).filename().string();
    httplib::Server http;
    // Every limit explicit: body size, socket timeouts, keep-alive, connection threads.
    http.set_payload_max_length(opt.max_body);
    http.set_read_timeout(30, 0);
    http.set_write_timeout(30, 0);
    http.set_keep_alive_timeout(5);
    http.set_keep_alive_max_count(100);
    const size_t threads = opt.http_threads > 0 ? static_cast<size_t>(opt.http_threads)
                                                : static_cast<size_t>(opt.parallel + opt.queue + 4);
    http.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
    serve::add_routes(http, s);
    int port = opt.port;
    if (port == 0)
      port = http.bind_to_any_port(opt.host);
    else if (!http.bind_to_port(opt.host, port))
      port = -1;
    if (port <= 0) throw Error("--host " + opt.host + " --port " + std::to_string(opt.port) + ": cannot listen there");
    std::signal(SIGPIPE, SIG_IGN);  // a client gone is a failed write, not the end of the server
    g_http = &http;
    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
    std::cerr << "ordo serve: listening on http://" << opt.host << ":" << port << " (loading the model)" << std::endl;
    std::atomic<bool> listening{true};
    std::thread listener([&http, &listening] {
      http.listen_after_bind();
      listening = false;
    });
    try {
      load(s);
    } catch (...) {
      g_http = nullptr;  // a signal from here on must not reach the server being destroyed
      http.stop();
      listener.join();
      throw;
    }
    std::cerr << "ordo serve: ready: " << s.model_id << ", context " << s.context << " tokens, --parallel "
              << opt.parallel << ", --queue " << opt.queue << std::endl;
    // The listener's join waits for every handler, and a non-streaming handler waits for its whole
    // generation: end the generations first (they answer 503 "cancelled"), then join.
    while (!g_signalled && listening) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    s.ready = false;
    s.scheduler->stop();
    listener.join();
    s.scheduler.reset();
    g_http = nullptr;
    return 0;
  }
};

}  // namespace

std::unique_ptr<Command> make_serve() { return std::make_unique<ServeCommand>(); }

}  // namespace ordo::cli
