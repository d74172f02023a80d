// Doubling-size benchmark of the paths whose cost should grow linearly with their input: added
// tokens (lstrip, many tokens), Unigram over unknown characters, a Split regex that exhausts the
// PCRE2 JIT stack, safetensors headers (whole open, and the header's JSON parse alone) and JSON
// configs. Prints seconds per size and per unit;
// a linear path keeps the per-unit column flat as the size doubles. Not a timed test.
//
//   ordo_bench_linear [--max-seconds=S] [--only=CLASS]
//
// Each class doubles its size until one run takes longer than --max-seconds (default 2) or the
// class's largest size is reached. Scratch files go to $TMPDIR (default /tmp).
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "json_config.hpp"
#include "ordo/safetensors.hpp"
#include "ordo/tokenizer.hpp"

namespace {

using nlohmann::json;

std::string scratch_dir() {
  const char* t = std::getenv("TMPDIR");
  std::string dir = std::string(t && *t ? t : "/tmp") + "/ordo_bench_linear_" + std::to_string(::getpid());
  std::string cmd = "mkdir -p '" + dir + "'";
  if (std::system(cmd.c_str()) != 0) throw std::runtime_error("cannot create " + dir);
  return dir;
}

void write_file(const std::string& path, const std::string& data) {
  std::ofstream f(path, std::ios::binary);
  f.write(data.data(), static_cast<std::streamsize>(data.size()));
  if (!f) throw std::runtime_error("cannot write " + path);
}

double seconds(const std::function<void()>& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Runs `run(size)` for size = first, 2*first, ... and prints one row per size. run builds its
// input, then returns the seconds of the timed part alone.
// An error (the old "JIT stack limit reached") ends the class's rows with the message.
void doubling(const char* name, const char* unit, size_t first, size_t last, double max_seconds,
              const std::function<double(size_t)>& run) {
  for (size_t n = first; n <= last; n *= 2) {
    double s = 0;
    try {
      s = run(n);
    } catch (const std::exception& e) {
      std::printf("%-18s %10zu %-9s failed: %s\n", name, n, unit, e.what());
      return;
    }
    std::printf("%-18s %10zu %-9s %9.4f s %10.1f ns/%s\n", name, n, unit, s, s * 1e9 / static_cast<double>(n), unit);
    std::fflush(stdout);
    if (s > max_seconds) break;
  }
}

std::unique_ptr<ordo::Tokenizer> tokenizer_from(const std::string& dir, const json& j) {
  write_file(dir + "/tokenizer.json", j.dump());
  return ordo::load_tokenizer_json(dir + "/tokenizer.json");
}

json word_level(json vocab) { return {{"type", "WordLevel"}, {"vocab", std::move(vocab)}, {"unk_token", "<unk>"}}; }

json added(int id, const std::string& content, bool lstrip, bool rstrip, bool single_word) {
  return {{"id", id},         {"content", content}, {"single_word", single_word},
          {"lstrip", lstrip}, {"rstrip", rstrip},   {"normalized", false},
          {"special", true}};
}

// The tokenizer classes: added tokens (lstrip, many, loading), Unigram's unknown runs, Split.
void tokenizer_classes(const std::string& dir, double max_seconds, const std::string& only) {
  auto want = [&](const char* c) { return only.empty() || only == c; };
  if (want("added-lstrip")) {  // RoBERTa's <mask>: lstrip, matched n times in "a <mask> a <mask> ..."
    auto tok = tokenizer_from(dir, {{"model", word_level({{"a", 0}, {"<unk>", 1}, {"<mask>", 2}})},
                                    {"pre_tokenizer", {{"type", "WhitespaceSplit"}}},
                                    {"added_tokens", json::array({added(2, "<mask>", true, false, false)})}});
    doubling("added-lstrip", "matches", 1250, 1280000, max_seconds, [&](size_t n) {
      std::string text;
      for (size_t i = 0; i < n; ++i) text += "a <mask> ";
      size_t got = 0;
      const double s = seconds([&] { got = tok->encode(text, false).size(); });
      if (got != 2 * n) throw std::runtime_error("added-lstrip: wrong token count");
      return s;
    });
  }
  if (want("added-many")) {  // 20,000 added tokens, text of words that are all added tokens
    json vocab = {{"<unk>", 0}}, toks = json::array();
    for (int i = 0; i < 20000; ++i) {
      vocab["tok" + std::to_string(i)] = i + 1;
      toks.push_back(added(i + 1, "tok" + std::to_string(i), false, false, false));
    }
    auto tok = tokenizer_from(
        dir, {{"model", word_level(vocab)}, {"pre_tokenizer", {{"type", "WhitespaceSplit"}}}, {"added_tokens", toks}});
    doubling("added-many", "bytes", 16384, 67108864, max_seconds, [&](size_t n) {
      std::string text;
      for (size_t i = 0; text.size() < n; ++i) text += "tok" + std::to_string((i * 7919) % 20000) + " x ";
      return seconds([&] { tok->encode(text, false); });
    });
  }
  if (want("added-load")) {  // loading a tokenizer.json with n added tokens (building the matcher)
    doubling("added-load", "tokens", 5000, 1280000, max_seconds, [&](size_t n) {
      json vocab = {{"<unk>", 0}}, toks = json::array();
      for (size_t i = 0; i < n; ++i) {
        vocab["tok" + std::to_string(i)] = static_cast<int>(i + 1);
        toks.push_back(added(static_cast<int>(i + 1), "tok" + std::to_string(i), false, false, false));
      }
      write_file(dir + "/tokenizer.json", json{{"model", word_level(vocab)}, {"added_tokens", toks}}.dump());
      size_t got = 0;
      const double s =
          seconds([&] { got = ordo::load_tokenizer_json(dir + "/tokenizer.json")->encode("tok1", false).size(); });
      if (got != 1) throw std::runtime_error("added-load: wrong token count");
      return s;
    });
  }
  if (want("unigram-unknown")) {  // CJK without spaces, no piece covers it: one fused unk run
    auto tok =
        tokenizer_from(dir, {{"model",
                              {{"type", "Unigram"},
                               {"unk_id", 0},
                               {"vocab", json::array({json::array({"<unk>", 0.0}), json::array({"a", -1.0})})}}}});
    doubling("unigram-unknown", "bytes", 16384, 67108864, max_seconds, [&](size_t n) {
      std::string text;
      while (text.size() < n) text += "\xe4\xb8\xad\xe6\x96\x87";  // 中文
      size_t got = 0;
      const double s = seconds([&] { got = tok->encode(text, false).size(); });
      if (got != 1) throw std::runtime_error("unigram-unknown: expected one unk");
      return s;
    });
  }
  if (want("split-jit")) {  // a linear Split pattern over one long word
    auto tok = tokenizer_from(
        dir, {{"model", word_level({{"<unk>", 0}})},
              {"pre_tokenizer",
               {{"type", "Split"}, {"pattern", {{"Regex", "(?:\\p{L}|\\p{N})+"}}}, {"behavior", "Isolated"}}}});
    doubling("split-jit", "letters", 1000, 16384000, max_seconds, [&](size_t n) {
      const std::string word(n, 'a');
      size_t got = 0;
      const double s = seconds([&] { got = tok->encode(word, false).size(); });
      if (got != 1) throw std::runtime_error("split-jit: expected one unk");
      return s;
    });
  }
}

// The file-format classes: safetensors headers (and their JSON parse alone), config.json objects.
void file_classes(const std::string& dir, double max_seconds, const std::string& only) {
  auto want = [&](const char* c) { return only.empty() || only == c; };
  // A safetensors header listing n one-float tensors.
  const auto safetensors_header = [](size_t n) {
    std::string header = "{";
    for (size_t i = 0; i < n; ++i)
      header += (i ? ",\"model.layers." : "\"model.layers.") + std::to_string(i) +
                ".weight\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[" + std::to_string(4 * i) + "," +
                std::to_string(4 * i + 4) + "]}";
    return header + "}";
  };
  if (want("safetensors")) {  // a header listing n one-float tensors
    doubling("safetensors", "tensors", 3125, 1600000, max_seconds, [&](size_t n) {
      const std::string header = safetensors_header(n);
      std::string file(8, '\0');
      const uint64_t len = header.size();
      std::memcpy(&file[0], &len, 8);
      file += header;
      file.append(4 * n, '\0');
      write_file(dir + "/model.safetensors", file);
      size_t got = 0;
      const double s = seconds([&] { got = ordo::SafeTensors::open(dir + "/model.safetensors").size(); });
      if (got != n) throw std::runtime_error("safetensors: wrong tensor count");
      return s;
    });
  }
  if (want("safetensors-json")) {  // the same header's JSON parse alone, keys reported as safetensors asks
    doubling("safetensors-json", "tensors", 3125, 1600000, max_seconds, [&](size_t n) {
      const std::string header = safetensors_header(n);
      size_t keys = 0;
      const double s = seconds([&] {
        ordo::parse_json_document(header.data(), header.size(), "model.safetensors", "header is not valid JSON",
                                  [&](int depth, const std::string&) { keys += depth == 1; });
      });
      if (keys != n) throw std::runtime_error("safetensors-json: wrong key count");
      return s;
    });
  }
  if (want("config-objects")) {  // a config with n small nested objects
    doubling("config-objects", "objects", 6250, 3200000, max_seconds, [&](size_t n) {
      std::string text = "{\"hidden_size\":64";
      for (size_t i = 0; i < n; ++i) text += ",\"k" + std::to_string(i) + "\":{\"a\":{\"b\":1}}";
      text += "}";
      int64_t got = 0;
      const double s = seconds([&] { got = ordo::JsonConfig::parse(text, "config.json").get_int("hidden_size"); });
      if (got != 64) throw std::runtime_error("config-objects: wrong value");
      return s;
    });
  }
}

}  // namespace

int main(int argc, char** argv) {
  double max_seconds = 2.0;
  std::string only;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--max-seconds=", 14) == 0)
      max_seconds = std::atof(argv[i] + 14);
    else if (std::strncmp(argv[i], "--only=", 7) == 0)
      only = argv[i] + 7;
    else {
      std::fprintf(stderr, "usage: ordo_bench_linear [--max-seconds=S] [--only=CLASS]\n");
      return 2;
    }
  }
  const std::string dir = scratch_dir();
  std::printf("%-18s %10s %-9s %11s %13s\n", "class", "size", "unit", "time", "per unit");
  try {
    tokenizer_classes(dir, max_seconds, only);
    file_classes(dir, max_seconds, only);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ordo_bench_linear: %s\n", e.what());
    if (std::system(("rm -rf '" + dir + "'").c_str()) != 0) return 1;
    return 1;
  }
  return std::system(("rm -rf '" + dir + "'").c_str()) == 0 ? 0 : 1;
}
