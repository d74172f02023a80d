// The Hugging Face tokenizer goldens (tests/data/tokenizers/golden.json, made by
// tools/tokenizers/make_vectors.js) and their tokenizers, loaded once, for the tokenizer tests.
#pragma once

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "ordo/tokenizer.hpp"

namespace ordo::test::hf_tokenizers {

using nlohmann::json;

inline const std::string kDir = std::string(ORDO_TEST_DATA) + "/tokenizers";

inline const json& golden() {
  static const json j = [] {
    std::ifstream f(kDir + "/golden.json");
    if (!f) throw std::runtime_error("cannot open " + kDir + "/golden.json");
    return json::parse(f);
  }();
  return j;
}

inline const json& entry(const std::string& name) {
  for (const auto& t : golden()["tokenizers"])
    if (t["name"] == name) return t;
  throw std::runtime_error("no golden tokenizer " + name);
}

inline const ordo::Tokenizer& tokenizer(const std::string& name) {
  static std::map<std::string, std::unique_ptr<ordo::Tokenizer>> cache;
  auto it = cache.find(name);
  if (it != cache.end()) return *it->second;
  const json& e = entry(name);
  std::unique_ptr<ordo::Tokenizer> tok = e.value("marian", false)
                                             ? ordo::load_marian(kDir + "/" + name)
                                             : ordo::load_tokenizer_json(kDir + "/" + e["files"][0].get<std::string>());
  return *cache.emplace(name, std::move(tok)).first->second;
}

// A fresh temporary directory, removed at scope exit.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    std::random_device rd;
    path =
        std::filesystem::temp_directory_path() / ("ordo_tokjson_test_" + std::to_string(rd()) + std::to_string(rd()));
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(path / name) << text;
    return (path / name).string();
  }
  std::string str() const { return path.string(); }
};

}  // namespace ordo::test::hf_tokenizers
