// What `ordo serve`'s files share: the server's state (model, scheduler, metrics, options) and
// the route handlers each file defines.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>

#include "ordo/ordo.hpp"
#include "ordo/scheduler.hpp"
#include "serve_api.hpp"
#include "serve_metrics.hpp"

namespace httplib {
class Server;
struct Request;
struct Response;
}  // namespace httplib

namespace ordo::cli::serve {

struct Options {
  std::string host = "127.0.0.1";
  int port = 8080;
  int parallel = 4;           // sequences in flight
  int queue = 32;             // requests waiting beyond them
  int http_threads = 0;       // 0: parallel + queue + 4
  std::string api_key;        // "": none needed
  double timeout = 600;       // seconds a non-streaming generation may take
  size_t max_body = 4 << 20;  // bytes of a request body
};

struct State {
  Options opt;
  std::string model_id;  // "model" in answers: the directory's name
  std::atomic<bool> ready{false};
  std::unique_ptr<Model> model;
  std::unique_ptr<Scheduler> scheduler;
  int64_t context = 0;  // prompt + max_tokens may not exceed it
  // What a request leaves unset: `ordo run`'s resolution of the generation flags over the
  // model's generation_config.json. Its stop ids: the model's EOS ids and --stop-id's.
  TextGenerateParams defaults;
  Metrics metrics;
  std::atomic<uint64_t> next_id{1};
};

// Registers every route, the API-key check, the loading check and JSON error answers.
void add_routes(httplib::Server& http, State& s);
// POST /v1/completions (chat false) and /v1/chat/completions (serve_generate.cpp).
void handle_generation(const httplib::Request& req, httplib::Response& res, State& s, bool chat);
// POST /v1/embeddings, /tokenize, /detokenize (serve_routes.cpp).
void handle_embeddings(const httplib::Request& req, httplib::Response& res, State& s);

// A JSON answer with its status.
void reply(httplib::Response& res, int status, const std::string& body);
void reply_error(httplib::Response& res, const ApiError& e);

}  // namespace ordo::cli::serve
