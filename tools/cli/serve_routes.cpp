// `ordo serve`'s routes: the API-key and loading checks, JSON errors, and the routes that need no
// scheduler (embeddings, tokenize, detokenize, models, health, metrics).
#include <httplib.h>

#include <algorithm>

#include "serve.hpp"

namespace ordo::cli::serve {
namespace {

using json = nlohmann::json;

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

// Compares without stopping at the first difference (no timing hint about the key).
bool same_secret(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i % std::max<size_t>(b.size(), 1)]);
  return diff == 0 && !b.empty();
}

// The routes answered in JSON: any exception becomes an error answer in OpenAI's shape.
httplib::Server::Handler guarded(std::function<void(const httplib::Request&, httplib::Response&)> f) {
  return [f](const httplib::Request& req, httplib::Response& res) {
    try {
      f(req, res);
    } catch (const ApiError& e) {
      reply_error(res, e);
    } catch (const Error& e) {  // the model refusing this request's input
      reply_error(res, invalid(e.what()));
    } catch (const std::bad_alloc&) {
      reply_error(res, ApiError(500, "server_error", "out of memory answering this request"));
    } catch (const std::exception& e) {
      reply_error(res, ApiError(500, "server_error", e.what()));
    }
  };
}

const char* message_for(int status) {
  switch (status) {
    case 400: return "bad request";
    case 404: return "no such route";
    case 413: return "the request body is larger than the server accepts (--max-body)";
    case 414: return "the request URI is too long";
    default: return "request failed";
  }
}

void tokenize(const httplib::Request& req, httplib::Response& res, State& s) {
  const TokenizeRequest r = parse_tokenize(parse_body(req.body));
  const std::vector<int32_t> ids = s.model->encode(r.content, r.add_special);
  json tokens = json::array();
  for (int32_t id : ids)
    if (r.with_pieces)
      tokens.push_back({{"id", id}, {"piece", s.model->tokenizer().id_to_piece(id)}});
    else
      tokens.push_back(id);
  reply(res, 200, dump({{"tokens", tokens}}));
}

void detokenize(const httplib::Request& req, httplib::Response& res, State& s) {
  const std::vector<int32_t> ids = parse_detokenize(parse_body(req.body));
  for (int32_t id : ids)
    if (id >= s.model->spec().vocab_size)
      throw invalid("'tokens': token id " + std::to_string(id) + " is outside the vocabulary (" +
                        std::to_string(s.model->spec().vocab_size) + " tokens)",
                    "tokens");
  reply(res, 200, dump({{"content", s.model->decode(ids)}}));
}

void models(httplib::Response& res, const State& s) {
  const json m = {{"id", s.model_id},
                  {"object", "model"},
                  {"created", 0},
                  {"owned_by", "ordo"},
                  {"meta",
                   {{"architecture", s.model->spec().architecture},
                    {"vocab_size", s.model->spec().vocab_size},
                    {"context", s.context},
                    {"chat_template", s.model->has_chat_template()}}}};
  reply(res, 200, dump({{"object", "list"}, {"data", json::array({m})}}));
}

}  // namespace

void reply(httplib::Response& res, int status, const std::string& body) {
  res.status = status;
  res.set_content(body, "application/json");
}

void reply_error(httplib::Response& res, const ApiError& e) {
  reply(res, e.status, error_body(e.what(), e.type, e.param, e.status));
}

void handle_embeddings(const httplib::Request& req, httplib::Response& res, State& s) {
  const EmbeddingRequest r = parse_embeddings(parse_body(req.body));
  const Model& m = *s.model;
  std::vector<EncodeRequest> inputs;
  int64_t tokens = 0;
  for (const std::string& t : r.texts) inputs.push_back({m.encode(t, true), {}, {}});
  for (const auto& ids : r.ids) {
    for (int32_t id : ids)
      if (id >= m.spec().vocab_size)
        throw invalid("'input': token id " + std::to_string(id) + " is outside the vocabulary", "input");
    inputs.push_back({ids, {}, {}});
  }
  for (const EncodeRequest& in : inputs) {
    if (static_cast<int64_t>(in.ids.size()) > s.context)
      throw invalid("an input of " + std::to_string(in.ids.size()) + " tokens exceeds the context limit of " +
                        std::to_string(s.context) + " tokens",
                    "input");
    tokens += static_cast<int64_t>(in.ids.size());
  }
  const Tensor e = m.embed_ids(inputs);
  const int64_t d = e.shape[1];
  json data = json::array();
  for (size_t i = 0; i < inputs.size(); ++i) {
    const float* row = e.f32() + static_cast<int64_t>(i) * d;
    data.push_back({{"object", "embedding"}, {"index", i}, {"embedding", std::vector<float>(row, row + d)}});
  }
  reply(res, 200,
        dump({{"object", "list"},
              {"data", data},
              {"model", s.model_id},
              {"usage", {{"prompt_tokens", tokens}, {"total_tokens", tokens}}}}));
}

void add_routes(httplib::Server& http, State& s) {
  // Before routing: /health answers without a key (503 while loading); everything else needs
  // the key when one is set, and the model.
  http.set_pre_routing_handler([&s](const httplib::Request& req, httplib::Response& res) {
    using R = httplib::Server::HandlerResponse;
    if (req.path == "/health") {
      if (s.ready)
        reply(res, 200, R"({"status":"ok"})");
      else
        reply_error(res, ApiError(503, "unavailable_error", "loading the model"));
      return R::Handled;
    }
    if (!s.opt.api_key.empty()) {
      const std::string auth = req.get_header_value("Authorization");
      const std::string bearer = "Bearer ";
      if (auth.compare(0, bearer.size(), bearer) != 0 || !same_secret(auth.substr(bearer.size()), s.opt.api_key)) {
        reply_error(res,
                    ApiError(401, "authentication_error", "invalid or missing API key (Authorization: Bearer KEY)"));
        return R::Handled;
      }
    }
    if (!s.ready) {
      reply_error(res, ApiError(503, "unavailable_error", "loading the model"));
      return R::Handled;
    }
    return R::Unhandled;
  });
  // Errors httplib answers itself (413, 404, 400 for a malformed request line) as JSON too.
  http.set_error_handler(httplib::Server::HandlerWithResponse([](const httplib::Request& req, httplib::Response& res) {
    using R = httplib::Server::HandlerResponse;
    if (!res.body.empty()) return R::Unhandled;
    const std::string msg =
        std::string(message_for(res.status)) + (res.status == 404 ? ": " + req.method + " " + req.path : "");
    reply(res, res.status,
          error_body(msg, res.status == 404 ? "not_found_error" : "invalid_request_error", "", res.status));
    return R::Handled;
  }));
  http.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
    reply_error(res, ApiError(500, "server_error", "internal error"));
  });
  http.set_logger([&s](const httplib::Request& req, const httplib::Response& res) {
    static const char* known[] = {"/v1/completions", "/v1/chat/completions", "/v1/embeddings", "/tokenize",
                                  "/detokenize",     "/v1/models",           "/health",        "/metrics"};
    const bool is_known = std::find(std::begin(known), std::end(known), req.path) != std::end(known);
    s.metrics.count_request(is_known ? req.path : "other", res.status);
  });
  http.Post("/v1/completions", guarded([&s](const auto& req, auto& res) { handle_generation(req, res, s, false); }));
  http.Post("/v1/chat/completions",
            guarded([&s](const auto& req, auto& res) { handle_generation(req, res, s, true); }));
  http.Post("/v1/embeddings", guarded([&s](const auto& req, auto& res) { handle_embeddings(req, res, s); }));
  http.Post("/tokenize", guarded([&s](const auto& req, auto& res) { tokenize(req, res, s); }));
  http.Post("/detokenize", guarded([&s](const auto& req, auto& res) { detokenize(req, res, s); }));
  http.Get("/v1/models", guarded([&s](const auto&, auto& res) { models(res, s); }));
  http.Get("/metrics", [&s](const httplib::Request&, httplib::Response& res) {
    res.set_content(s.metrics.text(s.scheduler->stats(), s.ready), "text/plain; version=0.0.4");
  });
}

}  // namespace ordo::cli::serve
