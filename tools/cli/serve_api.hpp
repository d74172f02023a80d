// `ordo serve`'s request bodies: JSON checked against the loaders' limits and parsed into typed
// requests, and errors in OpenAI's shape. No model needed (the fuzzer calls these alone).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "ordo/chat_template.hpp"
#include "ordo/tensor.hpp"

namespace ordo::cli::serve {

// An answer other than 200: HTTP status, OpenAI's error type, the parameter at fault ("" none).
struct ApiError : Error {
  ApiError(int status_, std::string type_, const std::string& message, std::string param_ = {})
      : Error(message), status(status_), type(std::move(type_)), param(std::move(param_)) {}
  int status;
  std::string type, param;
};
// 400 invalid_request_error naming `param`.
ApiError invalid(const std::string& message, const std::string& param = {});

// {"error": {"message", "type", "param", "code"}} (param null when empty; code: the status).
std::string error_body(const std::string& message, const std::string& type, const std::string& param, int code);

// The body as a JSON object: the loaders' size and nesting limits (check_json_limits), then
// parsed; ApiError 400 naming the position of a syntax error.
nlohmann::json parse_body(const std::string& body);

// What /v1/completions and /v1/chat/completions share. Unset optionals take the server's defaults
// (its generation flags, else the model's generation_config.json, else ordo's: as `ordo run`).
struct SamplingRequest {
  std::optional<int64_t> max_tokens;
  std::optional<double> temperature, top_p, min_p, repetition_penalty;
  std::optional<int64_t> top_k;
  std::optional<uint64_t> seed;
  std::vector<std::string> stop;
  int64_t logprobs = -1;  // top alternatives per token (0: the chosen one's only); -1: none
  bool stream = false, ignore_eos = false;
};

struct CompletionRequest : SamplingRequest {
  std::optional<std::string> prompt_text;  // "prompt": "..." (or ["..."])
  std::vector<int32_t> prompt_ids;         // "prompt": [1, 2, 3] (or [[1, 2, 3]])
  bool echo = false;
};

struct ChatRequest : SamplingRequest {
  std::vector<ChatMessage> messages;
};

CompletionRequest parse_completion(const nlohmann::json& body);
ChatRequest parse_chat(const nlohmann::json& body);

// /tokenize: {"content": "...", "add_special": true, "with_pieces": false}
struct TokenizeRequest {
  std::string content;
  bool add_special = true, with_pieces = false;
};
TokenizeRequest parse_tokenize(const nlohmann::json& body);
// /detokenize: {"tokens": [1, 2, 3]}
std::vector<int32_t> parse_detokenize(const nlohmann::json& body);
// /v1/embeddings: "input" as a string, a list of strings, ids or a list of id lists.
struct EmbeddingRequest {
  std::vector<std::string> texts;
  std::vector<std::vector<int32_t>> ids;  // used when texts is empty
};
EmbeddingRequest parse_embeddings(const nlohmann::json& body);

// Limits of one request, beside the body size and JSON limits.
constexpr size_t kMaxStops = 16, kMaxStopBytes = 1024, kMaxInputs = 256, kMaxMessages = 4096;
constexpr int64_t kMaxLogprobs = 20;

}  // namespace ordo::cli::serve
