// A model directory's generation settings, and how a caller's flags and those settings combine.
#include "generation_config.hpp"

#include <climits>
#include <cmath>
#include <filesystem>
#include <sstream>

#include "json_config.hpp"

namespace fs = std::filesystem;

namespace ordo {

namespace {

constexpr const char* kGen = "generation_config.json";

// Reads one file's fields into g (fields already set stay: the first file read wins).
void read_fields(const JsonConfig& c, const std::string& name, GenerationConfig& g, std::vector<int32_t>& eos) {
  auto bad = [&](const std::string& key, const std::string& what) {
    throw Error(c.origin() + ": field '" + key + "' must be " + what);
  };
  auto take = [&](const char* key) {
    if (!c.has(key) || g.source.count(key)) return false;
    g.source[key] = name;
    return true;
  };
  auto count = [&](const char* key, std::optional<int>& out, int64_t lo) {
    if (!take(key)) return;
    const int64_t v = c.get_int(key);
    if (v < lo || v > INT_MAX) bad(key, "an integer in [" + std::to_string(lo) + ", 2147483647], got " + std::to_string(v));
    out = static_cast<int>(v);
  };
  auto number = [&](const char* key, std::optional<float>& out, double lo, bool lo_open, double hi) {
    if (!take(key)) return;
    const double v = c.get_double(key);
    if (!(std::isfinite(v) && (lo_open ? v > lo : v >= lo) && v <= hi)) {
      std::ostringstream m;
      m << "a number in " << (lo_open ? "(" : "[") << lo << ", " << hi << "], got " << v;
      bad(key, m.str());
    }
    out = static_cast<float>(v);
  };
  if (take("do_sample")) g.do_sample = c.get_bool("do_sample");
  number("temperature", g.temperature, 0, false, 1e30);
  number("top_p", g.top_p, 0, true, 1);
  number("min_p", g.min_p, 0, false, 1);
  number("repetition_penalty", g.repetition_penalty, 0, true, 1e30);
  count("top_k", g.top_k, 0);
  count("max_new_tokens", g.max_new_tokens, 0);
  count("max_length", g.max_length, 0);
  count("num_beams", g.num_beams, 1);
  count("num_return_sequences", g.num_return_sequences, 1);
  count("no_repeat_ngram_size", g.no_repeat_ngram_size, 0);
  if (take("length_penalty")) {
    g.length_penalty = c.get_double("length_penalty");
    if (!std::isfinite(*g.length_penalty)) bad("length_penalty", "a finite number");
  }
  if (take("early_stopping")) {
    const nlohmann::json& v = c.raw().at("early_stopping");
    if (v.is_boolean())
      g.early_stopping = v.get<bool>() ? EarlyStopping::OnFull : EarlyStopping::Heuristic;
    else if (v.is_string() && v.get<std::string>() == "never")
      g.early_stopping = EarlyStopping::Never;
    else
      bad("early_stopping", "true, false or \"never\", got " + v.dump());
  }
  if (take("bad_words_ids")) {
    const nlohmann::json& v = c.raw().at("bad_words_ids");
    std::vector<std::vector<int32_t>> words;
    const std::string want = "a list of non-empty lists of token ids";
    if (!v.is_array()) bad("bad_words_ids", want);
    for (const nlohmann::json& w : v) {
      if (!w.is_array() || w.empty()) bad("bad_words_ids", want);
      std::vector<int32_t> ids;
      for (const nlohmann::json& id : w) {
        if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX) bad("bad_words_ids", want);
        ids.push_back(static_cast<int32_t>(id.get<int64_t>()));
      }
      words.push_back(std::move(ids));
    }
    g.bad_words_ids = std::move(words);
  }
  count("min_length", g.min_length, 0);
  count("min_new_tokens", g.min_new_tokens, 0);
  if (take("renormalize_logits")) g.renormalize_logits = c.get_bool("renormalize_logits");
  if (take("forced_eos_token_id")) {
    std::vector<int32_t> ids;
    for (int64_t id : c.get_int_array("forced_eos_token_id")) {
      if (id < 0 || id > INT32_MAX)
        bad("forced_eos_token_id", "a token id or a list of them in [0, 2147483647], got " + std::to_string(id));
      ids.push_back(static_cast<int32_t>(id));
    }
    g.forced_eos_token_id = std::move(ids);
  }
  if (eos.empty() && c.has("eos_token_id"))
    for (int64_t id : c.get_int_array("eos_token_id")) {
      if (id < -1 || id > INT32_MAX)
        bad("eos_token_id", "a token id or a list of them in [-1, 2147483647], got " + std::to_string(id));
      if (id >= 0) eos.push_back(static_cast<int32_t>(id));
    }
}

std::string text_of(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

}  // namespace

GenerationFiles read_generation_files(const std::string& dir) {
  GenerationFiles out;
  const fs::path gen = fs::path(dir) / kGen, cfg = fs::path(dir) / "config.json";
  bool with_config = true;
  if (fs::exists(gen)) {
    const JsonConfig g = JsonConfig::load(gen.string());
    with_config = g.get_bool("_from_model_config", false);
    read_fields(g, kGen, out.config, out.eos_ids);
  }
  if (with_config && fs::exists(cfg)) read_fields(JsonConfig::load(cfg.string()), "config.json", out.config, out.eos_ids);
  return out;
}

TextGenerateParams resolve_generation(const GenerationConfig& overrides, const GenerationConfig& config,
                                      std::vector<GenerationSetting>* used) {
  TextGenerateParams p;
  std::vector<GenerationSetting> report;
  auto from = [&](const char* key) {
    auto it = config.source.find(key);
    return it != config.source.end() ? it->second : std::string(kGen);
  };
  // The value of one setting: the caller's, the file's or the default, with its source recorded.
  auto pick = [&](const char* key, const auto& flag, const auto& file, auto def, bool show) {
    std::string src = "default";
    auto v = def;
    if (flag) {
      v = *flag;
      src = "flag";
    } else if (file) {
      v = *file;
      src = from(key);
    }
    if (show) report.push_back({key, text_of(static_cast<double>(v)), src});
    return v;
  };

  // Sampling or not, and who said so.
  bool sample = true;
  std::string sample_src = "default";
  if (overrides.do_sample) {
    sample = *overrides.do_sample;
    sample_src = "flag";
  } else if (overrides.temperature) {
    sample = *overrides.temperature > 0;
    sample_src = "flag";
  } else if (overrides.num_beams && *overrides.num_beams > 1) {
    sample = false;
    sample_src = "flag";
  } else if (config.do_sample) {
    sample = *config.do_sample;
    sample_src = from("do_sample");
  } else if (config.num_beams && *config.num_beams > 1) {
    sample = false;  // transformers' do_sample default
    sample_src = from("num_beams");
  }
  int beams = 1;
  std::string beams_src = "default";
  if (overrides.num_beams) {
    beams = *overrides.num_beams;
    beams_src = "flag";
  } else if (config.num_beams) {
    beams = *config.num_beams;
    beams_src = from("num_beams");
  }
  if (beams < 1) throw Error("num_beams must be >= 1, got " + std::to_string(beams));
  if (sample && beams > 1) {
    if (sample_src == "flag" && beams_src != "flag") {
      beams = 1;  // the caller asked to sample: the file's beams give way
      beams_src = "flag";
    } else {
      throw Error("beam sampling (do_sample from " + sample_src + " with num_beams " + std::to_string(beams) +
                  " from " + beams_src + ") is not supported: sample with num_beams 1, or use beam search " +
                  "without sampling (temperature 0)");
    }
  }
  const float temp = sample ? pick("temperature", overrides.temperature, config.temperature, 0.8f, false) : 0.0f;
  if (sample && temp == 0) sample = false;
  report.push_back({"decoding", beams > 1 ? "beam search" : sample ? "sampling" : "greedy",
                    beams > 1 ? beams_src : sample_src});
  if (sample) {
    p.sampling.temperature = pick("temperature", overrides.temperature, config.temperature, 0.8f, true);
    p.sampling.top_k = pick("top_k", overrides.top_k, config.top_k, 40, true);
    p.sampling.top_p = pick("top_p", overrides.top_p, config.top_p, 0.95f, true);
    // Named only when set (off by default, as in transformers).
    p.sampling.min_p = pick("min_p", overrides.min_p, config.min_p, 0.0f, overrides.min_p || config.min_p);
  }
  p.sampling.repetition_penalty =
      pick("repetition_penalty", overrides.repetition_penalty, config.repetition_penalty, 1.0f, true);
  if (beams > 1) {
    p.beams.num_beams = beams;
    report.push_back({"num_beams", std::to_string(beams), beams_src});
    p.beams.length_penalty = pick("length_penalty", overrides.length_penalty, config.length_penalty, 1.0, true);
    const EarlyStopping es = overrides.early_stopping ? *overrides.early_stopping
                                                      : config.early_stopping ? *config.early_stopping
                                                                              : EarlyStopping::Heuristic;
    p.beams.early_stopping = es;
    report.push_back({"early_stopping",
                      es == EarlyStopping::OnFull ? "true" : es == EarlyStopping::Never ? "never" : "false",
                      overrides.early_stopping ? "flag" : config.early_stopping ? from("early_stopping") : "default"});
  }
  const int returned = pick("num_return_sequences", overrides.num_return_sequences, config.num_return_sequences, 1,
                            beams > 1);
  if (returned > 1 && beams == 1 && overrides.num_return_sequences)
    throw Error("num_return_sequences " + std::to_string(returned) + " needs beam search (num_beams >= " +
                std::to_string(returned) + ")");
  if (beams > 1) {
    if (returned > beams)
      throw Error("num_return_sequences (" + std::to_string(returned) + ") must not exceed num_beams (" +
                  std::to_string(beams) + ")");
    p.beams.num_return_sequences = returned;
  }
  // Length: max_new_tokens, else max_length, flag before file.
  if (overrides.max_new_tokens || (!overrides.max_length && (config.max_new_tokens || !config.max_length))) {
    p.max_new_tokens = pick("max_new_tokens", overrides.max_new_tokens,
                            overrides.max_length ? std::optional<int>() : config.max_new_tokens, 128, true);
  } else {
    const int len = pick("max_length", overrides.max_length, config.max_length, 0, true);
    p.max_length = len;
    p.max_new_tokens = len;  // the prompt takes its share (GenerateParams::max_length)
  }
  if (overrides.no_repeat_ngram_size || config.no_repeat_ngram_size)
    p.sampling.no_repeat_ngram_size =
        pick("no_repeat_ngram_size", overrides.no_repeat_ngram_size, config.no_repeat_ngram_size, 0, true);
  const auto& bad = overrides.bad_words_ids ? overrides.bad_words_ids : config.bad_words_ids;
  if (bad && !bad->empty()) {
    p.sampling.bad_words_ids = *bad;
    report.push_back({"bad_words_ids", std::to_string(bad->size()) + " sequences",
                      overrides.bad_words_ids ? "flag" : from("bad_words_ids")});
  }
  // Hugging Face's length rules and renormalisation, as the file (or caller) sets them.
  if (overrides.min_length || config.min_length)
    p.min_length = pick("min_length", overrides.min_length, config.min_length, 0, true);
  if (overrides.min_new_tokens || config.min_new_tokens)
    p.min_new_tokens = pick("min_new_tokens", overrides.min_new_tokens, config.min_new_tokens, 0, true);
  const auto& forced = overrides.forced_eos_token_id ? overrides.forced_eos_token_id : config.forced_eos_token_id;
  if (forced && !forced->empty()) {
    p.forced_eos_ids = *forced;
    report.push_back({"forced_eos_token_id", std::to_string(forced->front()) + (forced->size() > 1 ? ", ..." : ""),
                      overrides.forced_eos_token_id ? "flag" : from("forced_eos_token_id")});
  }
  if (overrides.renormalize_logits || config.renormalize_logits)
    p.renormalize = pick("renormalize_logits", overrides.renormalize_logits, config.renormalize_logits, false, beams > 1);
  if (used) *used = std::move(report);
  return p;
}

}  // namespace ordo
