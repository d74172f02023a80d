// `ordo serve`'s request parsing: every field type- and range-checked, each error a 400 naming it.
#include "serve_api.hpp"

#include <cmath>
#include <cstdio>
#include <limits>

#include "ordo/input.hpp"

namespace ordo::cli::serve {
namespace {

using json = nlohmann::json;

std::string fmt(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", v);
  return b;
}

std::string type_of(const json& v) { return v.is_number_integer() ? "integer" : v.type_name(); }

// The field, or nullptr when absent or null (OpenAI's clients send null for "not set").
const json* field(const json& body, const char* key) {
  const auto it = body.find(key);
  return it == body.end() || it->is_null() ? nullptr : &*it;
}

std::optional<double> number(const json& body, const char* key, double lo, double hi) {
  const json* v = field(body, key);
  if (!v) return std::nullopt;
  if (!v->is_number()) throw invalid(std::string("'") + key + "' must be a number, got " + type_of(*v), key);
  const double d = v->get<double>();
  if (!(d >= lo && d <= hi))
    throw invalid(std::string("'") + key + "' must be in [" + fmt(lo) + ", " + fmt(hi) + "], got " + v->dump(), key);
  return d;
}

std::optional<int64_t> integer(const json& body, const char* key, int64_t lo, int64_t hi) {
  const json* v = field(body, key);
  if (!v) return std::nullopt;
  if (!v->is_number_integer()) throw invalid(std::string("'") + key + "' must be an integer, got " + type_of(*v), key);
  // A huge unsigned value does not fit int64: compare as unsigned first.
  if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(hi))
    throw invalid(std::string("'") + key + "' must be in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                      "], got " + v->dump(),
                  key);
  const int64_t i = v->get<int64_t>();
  if (i < lo || i > hi)
    throw invalid(std::string("'") + key + "' must be in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                      "], got " + v->dump(),
                  key);
  return i;
}

std::optional<bool> boolean(const json& body, const char* key) {
  const json* v = field(body, key);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) throw invalid(std::string("'") + key + "' must be a boolean, got " + type_of(*v), key);
  return v->get<bool>();
}

std::string string_of(const json& v, const std::string& what, const std::string& param) {
  if (!v.is_string()) throw invalid(what + " must be a string, got " + type_of(v), param);
  return v.get<std::string>();
}

// A list of token ids: every entry an integer in [0, 2^31).
std::vector<int32_t> ids_of(const json& v, const std::string& what, const std::string& param) {
  std::vector<int32_t> ids;
  for (size_t i = 0; i < v.size(); ++i) {
    const json& x = v[i];
    if (!x.is_number_integer() || x.get<int64_t>() < 0 || x.get<int64_t>() > std::numeric_limits<int32_t>::max())
      throw invalid(what + "[" + std::to_string(i) + "] must be a token id (an integer >= 0), got " + x.dump(), param);
    ids.push_back(static_cast<int32_t>(x.get<int64_t>()));
  }
  return ids;
}

void parse_sampling(const json& body, SamplingRequest& r, bool chat) {
  integer(body, "n", 1, 1);  // one choice per request
  integer(body, "best_of", 1, 1);
  r.max_tokens = integer(body, chat && field(body, "max_completion_tokens") ? "max_completion_tokens" : "max_tokens", 0,
                         std::numeric_limits<int32_t>::max() / 2);
  r.temperature = number(body, "temperature", 0, 2);
  r.top_p = number(body, "top_p", 0, 1);
  if (r.top_p == 0.0) throw invalid("'top_p' must be in (0, 1], got 0", "top_p");
  r.min_p = number(body, "min_p", 0, 1);
  r.repetition_penalty = number(body, "repetition_penalty", 1e-3, 1e3);
  r.top_k = integer(body, "top_k", 0, std::numeric_limits<int32_t>::max());
  if (auto s = integer(body, "seed", 0, std::numeric_limits<int64_t>::max())) r.seed = static_cast<uint64_t>(*s);
  for (const char* penalty : {"presence_penalty", "frequency_penalty"})
    if (number(body, penalty, -2, 2).value_or(0) != 0)
      throw invalid(std::string("'") + penalty + "' is not supported (give repetition_penalty)", penalty);
  if (const json* s = field(body, "stop")) {
    if (s->is_string()) {
      r.stop.push_back(s->get<std::string>());
    } else if (s->is_array()) {
      if (s->size() > kMaxStops)
        throw invalid("'stop' holds " + std::to_string(s->size()) + " strings; at most " + std::to_string(kMaxStops),
                      "stop");
      for (size_t i = 0; i < s->size(); ++i)
        r.stop.push_back(string_of((*s)[i], "'stop'[" + std::to_string(i) + "]", "stop"));
    } else {
      throw invalid("'stop' must be a string or a list of strings, got " + type_of(*s), "stop");
    }
    for (const std::string& x : r.stop)
      if (x.empty() || x.size() > kMaxStopBytes)
        throw invalid("each 'stop' string must hold 1 to " + std::to_string(kMaxStopBytes) + " bytes", "stop");
  }
  if (chat) {
    if (boolean(body, "logprobs").value_or(false))
      r.logprobs = integer(body, "top_logprobs", 0, kMaxLogprobs).value_or(0);
    else if (field(body, "top_logprobs"))
      throw invalid("'top_logprobs' needs \"logprobs\": true", "top_logprobs");
  } else {
    r.logprobs = integer(body, "logprobs", 0, kMaxLogprobs).value_or(-1);
  }
  r.stream = boolean(body, "stream").value_or(false);
  r.ignore_eos = boolean(body, "ignore_eos").value_or(false);
}

}  // namespace

ApiError invalid(const std::string& message, const std::string& param) {
  return ApiError(400, "invalid_request_error", message, param);
}

std::string error_body(const std::string& message, const std::string& type, const std::string& param, int code) {
  const json e = {
      {"error",
       {{"message", message}, {"type", type}, {"param", param.empty() ? json(nullptr) : json(param)}, {"code", code}}}};
  return e.dump(-1, ' ', false, json::error_handler_t::replace);
}

json parse_body(const std::string& body) {
  try {
    check_json_limits(body, "request body");
  } catch (const Error& e) {
    throw invalid(e.what());
  }
  json j;
  try {
    j = json::parse(body);
  } catch (const json::exception& e) {
    std::string detail = e.what();
    if (size_t at = detail.find("] "); at != std::string::npos) detail = detail.substr(at + 2);
    throw invalid("request body: malformed JSON: " + detail);
  }
  if (!j.is_object()) throw invalid("request body must be a JSON object, got " + type_of(j));
  return j;
}

CompletionRequest parse_completion(const json& body) {
  CompletionRequest r;
  const json* p = field(body, "prompt");
  if (!p) throw invalid("'prompt' is required", "prompt");
  const json* one = p;
  if (p->is_array() && p->size() == 1 && ((*p)[0].is_string() || (*p)[0].is_array())) one = &(*p)[0];
  if (one->is_string()) {
    r.prompt_text = one->get<std::string>();
  } else if (one->is_array() && !one->empty() && (*one)[0].is_number()) {
    r.prompt_ids = ids_of(*one, "'prompt'", "prompt");
  } else if (one->is_array() && one->size() > 1) {
    throw invalid("'prompt': one prompt per request (send several requests; they are batched)", "prompt");
  } else {
    throw invalid("'prompt' must be a string or a list of token ids, got " + type_of(*one), "prompt");
  }
  parse_sampling(body, r, false);
  r.echo = boolean(body, "echo").value_or(false);
  if (r.echo && r.logprobs >= 0) throw invalid("'echo' with 'logprobs' (scoring the prompt) is not supported", "echo");
  return r;
}

ChatRequest parse_chat(const json& body) {
  ChatRequest r;
  const json* m = field(body, "messages");
  if (!m || !m->is_array() || m->empty()) throw invalid("'messages' must be a non-empty list", "messages");
  if (m->size() > kMaxMessages) throw invalid("'messages' holds more than " + std::to_string(kMaxMessages), "messages");
  for (size_t i = 0; i < m->size(); ++i) {
    const json& x = (*m)[i];
    const std::string at = "'messages'[" + std::to_string(i) + "]";
    if (!x.is_object()) throw invalid(at + " must be an object, got " + type_of(x), "messages");
    const json* role = field(x, "role");
    if (!role) throw invalid(at + " has no 'role'", "messages");
    ChatMessage msg{string_of(*role, at + ".role", "messages"), ""};
    if (const json* c = field(x, "content")) {
      if (c->is_string()) {
        msg.content = c->get<std::string>();
      } else if (c->is_array()) {  // content parts: text only
        for (const json& part : *c) {
          const json* type = part.is_object() ? field(part, "type") : nullptr;
          if (!type || *type != "text" || !part.contains("text"))
            throw invalid(at + ".content: only {\"type\": \"text\", \"text\": ...} parts are supported", "messages");
          msg.content += string_of(part.at("text"), at + ".content[].text", "messages");
        }
      } else {
        throw invalid(at + ".content must be a string or a list of text parts, got " + type_of(*c), "messages");
      }
    }
    r.messages.push_back(std::move(msg));
  }
  if (field(body, "tools") || field(body, "functions"))
    throw invalid("'tools' are not supported by ordo serve", field(body, "tools") ? "tools" : "functions");
  parse_sampling(body, r, true);
  return r;
}

TokenizeRequest parse_tokenize(const json& body) {
  TokenizeRequest r;
  const json* c = field(body, "content");
  if (!c) throw invalid("'content' is required", "content");
  r.content = string_of(*c, "'content'", "content");
  r.add_special = boolean(body, "add_special").value_or(true);
  r.with_pieces = boolean(body, "with_pieces").value_or(false);
  return r;
}

std::vector<int32_t> parse_detokenize(const json& body) {
  const json* t = field(body, "tokens");
  if (!t || !t->is_array()) throw invalid("'tokens' must be a list of token ids", "tokens");
  return ids_of(*t, "'tokens'", "tokens");
}

EmbeddingRequest parse_embeddings(const json& body) {
  EmbeddingRequest r;
  const json* in = field(body, "input");
  if (!in) throw invalid("'input' is required", "input");
  if (in->is_string()) {
    r.texts.push_back(in->get<std::string>());
  } else if (in->is_array() && !in->empty()) {
    if (in->size() > kMaxInputs)
      throw invalid("'input' holds " + std::to_string(in->size()) + " inputs; at most " + std::to_string(kMaxInputs),
                    "input");
    if ((*in)[0].is_number()) {
      r.ids.push_back(ids_of(*in, "'input'", "input"));
    } else {
      for (size_t i = 0; i < in->size(); ++i) {
        const json& x = (*in)[i];
        const std::string at = "'input'[" + std::to_string(i) + "]";
        if (x.is_string() && r.ids.empty())
          r.texts.push_back(x.get<std::string>());
        else if (x.is_array() && r.texts.empty())
          r.ids.push_back(ids_of(x, at, "input"));
        else
          throw invalid(at + ": every input must be a string, or every one a list of token ids", "input");
      }
    }
  } else {
    throw invalid("'input' must be a string, a list of strings or token ids", "input");
  }
  for (const auto& ids : r.ids)
    if (ids.empty()) throw invalid("'input' holds an empty list of token ids", "input");
  if (const json* f = field(body, "encoding_format"))
    if (!f->is_string() || f->get<std::string>() != "float")
      throw invalid("'encoding_format' must be \"float\"", "encoding_format");
  return r;
}

}  // namespace ordo::cli::serve
