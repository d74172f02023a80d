// Reads a sentence-transformers directory's modules.json and Pooling config into ordo's pooling.
#include "sentence_transformers.hpp"

#include <filesystem>

#include "json_config.hpp"
#include "ordo/input.hpp"

namespace fs = std::filesystem;

namespace ordo {
namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The Pooling module's config.json: exactly one of the modes ordo has, and nothing it would drop
// (else `problem` says why).
Pooling read_pooling(const std::string& path, std::string& problem) {
  const JsonConfig c = JsonConfig::load(path);
  std::optional<Pooling> chosen;
  std::string chosen_key;
  for (const auto& [key, pooling] : {std::pair<const char*, Pooling>{"pooling_mode_mean_tokens", Pooling::Mean},
                                     {"pooling_mode_cls_token", Pooling::Cls},
                                     {"pooling_mode_lasttoken", Pooling::Last}}) {
    if (!c.get_bool(key, false)) continue;
    if (chosen && problem.empty())
      problem = path + ": both '" + chosen_key + "' and '" + key +
                "' are true (sentence-transformers concatenates them; ordo pools one way)";
    chosen = pooling;
    chosen_key = key;
  }
  for (const char* key :
       {"pooling_mode_max_tokens", "pooling_mode_mean_sqrt_len_tokens", "pooling_mode_weightedmean_tokens"})
    if (c.get_bool(key, false) && problem.empty())
      problem = path + ": field '" + key + "' is true; ordo pools by mean, cls or last token only";
  if (!c.get_bool("include_prompt", true) && problem.empty())
    problem = path +
              ": field 'include_prompt' is false (the prompt's tokens are left out of the pooling), "
              "which ordo does not do";
  if (!chosen && problem.empty()) problem = path + ": no pooling mode is true";
  return chosen.value_or(Pooling::Mean);
}

}  // namespace

std::optional<SentenceTransformersSetup> read_sentence_transformers(const std::string& dir) {
  const std::string path = (fs::path(dir) / "modules.json").string();
  if (!fs::exists(path)) return std::nullopt;
  const std::string text = read_input_file(path, kMaxJsonBytes, "a JSON file");
  const nlohmann::json j = parse_json_document(text.data(), text.size(), path, "malformed JSON");
  if (!j.is_array()) throw Error(path + ": not a JSON array of modules");
  SentenceTransformersSetup s;
  bool pooled = false;
  for (size_t i = 0; i < j.size(); ++i) {
    const std::string where = path + ": module " + std::to_string(i);
    const nlohmann::json& m = j[i];
    if (!m.is_object() || !m.contains("type") || !m.at("type").is_string())
      throw Error(where + ": field 'type' missing or not a string");
    const std::string type = m.at("type").get<std::string>();
    const std::string sub = m.contains("path") && m.at("path").is_string() ? m.at("path").get<std::string>() : "";
    if (ends_with(type, "models.Transformer")) continue;  // the model ordo loaded
    if (ends_with(type, "models.Pooling")) {
      if (sub.empty() || sub.find("..") != std::string::npos)
        throw Error(where + ": field 'path' must name the Pooling module's folder");
      s.pooling = read_pooling((fs::path(dir) / sub / "config.json").string(), s.problem);
      pooled = true;
    } else if (ends_with(type, "models.Normalize")) {
      s.normalize = true;
    } else if (s.problem.empty()) {
      s.problem = where + ": type '" + type +
                  "' is a module ordo does not apply (it runs the transformer, Pooling and Normalize only)";
    }
  }
  if (!pooled && s.problem.empty()) s.problem = path + ": no sentence_transformers.models.Pooling module";
  return s;
}

}  // namespace ordo
