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

// bad_words_ids: a list of non-empty lists of token ids.
std::vector<std::vector<int32_t>> read_bad_words(const JsonConfig& c) {
  const nlohmann::json& v = c.raw().at("bad_words_ids");
  std::vector<std::vector<int32_t>> words;
  const std::string want = "a list of non-empty lists of token ids";
  auto bad = [&] { throw Error(c.origin() + ": field 'bad_words_ids' must be " + want); };
  if (!v.is_array()) bad();
  for (const nlohmann::json& w : v) {
    if (!w.is_array() || w.empty()) bad();
    std::vector<int32_t> ids;
    for (const nlohmann::json& id : w) {
      if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX) bad();
      ids.push_back(static_cast<int32_t>(id.get<int64_t>()));
    }
    words.push_back(std::move(ids));
  }
  return words;
}

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
    if (v < lo || v > INT_MAX)
      bad(key, "an integer in [" + std::to_string(lo) + ", 2147483647], got " + std::to_string(v));
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
  if (take("bad_words_ids")) g.bad_words_ids = read_bad_words(c);
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

// Sampling or not and the number of beams, each with who said so: "flag", the file, "default".
struct Decoding {
  bool sample = true;
  std::string sample_src = "default";
  int beams = 1;
  std::string beams_src = "default";
};

// The file a setting came from (generation_config.json when it does not say).
std::string source_of(const GenerationConfig& config, const char* key) {
  auto it = config.source.find(key);
  return it != config.source.end() ? it->second : std::string(kGen);
}

Decoding decoding_of(const GenerationConfig& overrides, const GenerationConfig& config) {
  Decoding d;
  if (overrides.do_sample) {
    d.sample = *overrides.do_sample;
    d.sample_src = "flag";
  } else if (overrides.temperature) {
    d.sample = *overrides.temperature > 0;
    d.sample_src = "flag";
  } else if (overrides.num_beams && *overrides.num_beams > 1) {
    d.sample = false;
    d.sample_src = "flag";
  } else if (config.do_sample) {
    d.sample = *config.do_sample;
    d.sample_src = source_of(config, "do_sample");
  } else if (config.num_beams && *config.num_beams > 1) {
    d.sample = false;  // transformers' do_sample default
    d.sample_src = source_of(config, "num_beams");
  }
  if (overrides.num_beams) {
    d.beams = *overrides.num_beams;
    d.beams_src = "flag";
  } else if (config.num_beams) {
    d.beams = *config.num_beams;
    d.beams_src = source_of(config, "num_beams");
  }
  if (d.beams < 1) throw Error("num_beams must be >= 1, got " + std::to_string(d.beams));
  if (d.sample && d.beams > 1) {
    if (d.sample_src == "flag" && d.beams_src != "flag") {
      d.beams = 1;  // the caller asked to sample: the file's beams give way
      d.beams_src = "flag";
    } else {
      throw Error("beam sampling (do_sample from " + d.sample_src + " with num_beams " + std::to_string(d.beams) +
                  " from " + d.beams_src + ") is not supported: sample with num_beams 1, or use beam search " +
                  "without sampling (temperature 0)");
    }
  }
  return d;
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
  if (with_config && fs::exists(cfg))
    read_fields(JsonConfig::load(cfg.string()), "config.json", out.config, out.eos_ids);
  return out;
}

namespace {

// The value of one setting: the caller's, the file's or the default, with its source recorded
// in `report` when `show`.
struct Picker {
  const GenerationConfig& config;
  std::vector<GenerationSetting>& report;
  template <class Flag, class File, class T>
  T operator()(const char* key, const Flag& flag, const File& file, T def, bool show) const {
    std::string src = "default";
    T v = def;
    if (flag) {
      v = *flag;
      src = "flag";
    } else if (file) {
      v = *file;
      src = source_of(config, key);
    }
    if (show) report.push_back({key, text_of(static_cast<double>(v)), src});
    return v;
  }
};

// Beam search's settings: beams, length penalty, early stopping.
void set_beam_search(const GenerationConfig& overrides, const GenerationConfig& config, const Decoding& d,
                     const Picker& pick, TextGenerateParams& p) {
  p.beams.num_beams = d.beams;
  pick.report.push_back({"num_beams", std::to_string(d.beams), d.beams_src});
  p.beams.length_penalty = pick("length_penalty", overrides.length_penalty, config.length_penalty, 1.0, true);
  const EarlyStopping es = overrides.early_stopping ? *overrides.early_stopping
                           : config.early_stopping  ? *config.early_stopping
                                                    : EarlyStopping::Heuristic;
  p.beams.early_stopping = es;
  pick.report.push_back({"early_stopping",
                         es == EarlyStopping::OnFull  ? "true"
                         : es == EarlyStopping::Never ? "never"
                                                      : "false",
                         overrides.early_stopping ? "flag"
                         : config.early_stopping  ? source_of(config, "early_stopping")
                                                  : "default"});
}

// Hugging Face's length rules and renormalisation, as the file (or caller) sets them.
void set_length_rules(const GenerationConfig& overrides, const GenerationConfig& config, bool beam_search,
                      const Picker& pick, TextGenerateParams& p) {
  if (overrides.min_length || config.min_length)
    p.min_length = pick("min_length", overrides.min_length, config.min_length, 0, true);
  if (overrides.min_new_tokens || config.min_new_tokens)
    p.min_new_tokens = pick("min_new_tokens", overrides.min_new_tokens, config.min_new_tokens, 0, true);
  const auto& forced = overrides.forced_eos_token_id ? overrides.forced_eos_token_id : config.forced_eos_token_id;
  if (forced && !forced->empty()) {
    p.forced_eos_ids = *forced;
    pick.report.push_back({"forced_eos_token_id", std::to_string(forced->front()) + (forced->size() > 1 ? ", ..." : ""),
                           overrides.forced_eos_token_id ? "flag" : source_of(config, "forced_eos_token_id")});
  }
  if (overrides.renormalize_logits || config.renormalize_logits)
    p.renormalize =
        pick("renormalize_logits", overrides.renormalize_logits, config.renormalize_logits, false, beam_search);
}

}  // namespace

TextGenerateParams resolve_generation(const GenerationConfig& overrides, const GenerationConfig& config,
                                      std::vector<GenerationSetting>* used) {
  TextGenerateParams p;
  std::vector<GenerationSetting> report;
  auto from = [&](const char* key) { return source_of(config, key); };
  const Picker pick{config, report};

  Decoding d = decoding_of(overrides, config);
  bool sample = d.sample;
  const std::string sample_src = d.sample_src;
  const int beams = d.beams;
  const std::string beams_src = d.beams_src;
  const float temp = sample ? pick("temperature", overrides.temperature, config.temperature, 0.8f, false) : 0.0f;
  if (sample && temp == 0) sample = false;
  report.push_back({"decoding",
                    beams > 1 ? "beam search"
                    : sample  ? "sampling"
                              : "greedy",
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
  if (beams > 1) set_beam_search(overrides, config, d, pick, p);
  const int returned =
      pick("num_return_sequences", overrides.num_return_sequences, config.num_return_sequences, 1, beams > 1);
  if (returned > 1 && beams == 1 && overrides.num_return_sequences)
    throw Error("num_return_sequences " + std::to_string(returned) +
                " needs beam search (num_beams >= " + std::to_string(returned) + ")");
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
  set_length_rules(overrides, config, beams > 1, pick, p);
  if (used) *used = std::move(report);
  return p;
}

}  // namespace ordo
