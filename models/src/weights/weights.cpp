// ordo::Weights (ordo/weights.hpp): which files of a directory hold the weights, the shard index
// checked as untrusted input, and each file read by its format's reader.
#include "ordo/weights.hpp"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "../json_config.hpp"
#include "../model_dir.hpp"
#include "gguf.hpp"
#include "ordo/input.hpp"
#include "ordo/safetensors.hpp"
#include "torch_checkpoint.hpp"

namespace fs = std::filesystem;

namespace ordo {
namespace {

std::string brief(const nlohmann::json& j) {
  std::string s = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

// A shard must be a plain file name in the index's directory: no path separator, no "." or "..".
bool plain_file_name(const std::string& s) {
  return !s.empty() && s != "." && s != ".." && s.find('/') == std::string::npos && s.find('\\') == std::string::npos &&
         s.find('\0') == std::string::npos;
}

// What the directory holds, for the "no weights" message.
std::string listing(const fs::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    names.push_back(it->path().filename().string());
  std::sort(names.begin(), names.end());
  if (names.empty()) return "the directory is empty";
  std::string out = "found ";
  const size_t shown = std::min<size_t>(names.size(), 12);
  for (size_t i = 0; i < shown; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > shown) out += " and " + std::to_string(names.size() - shown) + " more";
  return out;
}

}  // namespace

void Weights::add_file(const std::string& path, const std::string& index, const std::string& shard) {
  const size_t fi = files_.size();
  files_.push_back(path);
  std::map<std::string, Tensor> tensors;
  std::map<std::string, std::string> unsupported;
  if (is_torch_file(path)) {
    TorchCheckpoint c = read_torch_checkpoint(path);
    tensors = std::move(c.tensors);
    unsupported = std::move(c.unsupported);
    mapped_.push_back({c.mapped.first, c.mapped.second, c.mapping});
    if (metadata_.empty()) metadata_ = {{"format", "pt"}};
  } else {
    const SafeTensors st = SafeTensors::open(path);
    tensors = st.tensors();
    mapped_.push_back({st.mapped_bytes().first, st.mapped_bytes().second, st.mapping()});
    if (fi == 0 || (fi == 1 && !index.empty())) metadata_ = st.metadata();
  }
  auto claim = [&](const std::string& name) {
    auto [it, fresh] = file_index_.emplace(name, fi);
    if (!fresh)
      throw Error(index + ": tensor '" + name + "' is in two shards, '" +
                  fs::path(files_[it->second]).filename().string() + "' and '" + shard + "'");
  };
  for (auto& [name, t] : tensors) {
    claim(name);
    tensors_.emplace(name, std::move(t));
  }
  for (auto& [name, why] : unsupported) {
    claim(name);
    unsupported_.emplace(name, std::move(why));
  }
}

Weights Weights::open_file(const std::string& path) {
  return with_ordo_errors(path, [&] {
    Weights w;
    w.origin_ = path;
    w.add_file(path, "", fs::path(path).filename().string());
    w.format_ = is_torch_file(path) ? "pytorch" : "safetensors";
    return w;
  });
}

Weights Weights::from_tensors(const std::string& origin, const std::string& format,
                              std::map<std::string, Tensor> tensors, std::map<std::string, std::string> unsupported,
                              const MappedFile& mapped) {
  Weights w;
  w.origin_ = origin;
  w.format_ = format;
  w.files_.push_back(origin);
  for (const auto& kv : tensors) w.file_index_.emplace(kv.first, 0);
  for (const auto& kv : unsupported) w.file_index_.emplace(kv.first, 0);
  w.tensors_ = std::move(tensors);
  w.unsupported_ = std::move(unsupported);
  w.mapped_.push_back(mapped);
  w.metadata_ = {{"format", format}};
  return w;
}

namespace {

struct IndexEntry {
  std::string tensor, shard;
};

// The index's weight_map, validated: an object of tensor name -> plain shard file name.
std::vector<IndexEntry> read_index(const std::string& index) {
  const std::string text = read_input_file(index, kMaxJsonBytes, "a weights index");
  std::string top;
  std::set<std::string> top_keys, map_keys;
  std::string duplicate_top, duplicate_tensor;
  const nlohmann::json j =
      parse_json_document(text.data(), text.size(), index, "malformed JSON", [&](int depth, const std::string& key) {
        if (depth == 1) {
          top = key;
          if (!top_keys.insert(key).second && duplicate_top.empty()) duplicate_top = key;
        } else if (depth == 2 && top == "weight_map" && !map_keys.insert(key).second && duplicate_tensor.empty()) {
          duplicate_tensor = key;
        }
      });
  if (!j.is_object()) throw Error(index + ": must be a JSON object, got " + brief(j));
  if (!duplicate_top.empty()) throw Error(index + ": field '" + duplicate_top + "' appears twice");
  if (!j.contains("weight_map")) throw Error(index + ": field 'weight_map' missing");
  const nlohmann::json& map = j.at("weight_map");
  if (!map.is_object())
    throw Error(index + ": field 'weight_map' must be an object of tensor name -> shard file, got " + brief(map));
  if (map.empty()) throw Error(index + ": field 'weight_map' is empty");
  if (!duplicate_tensor.empty())
    throw Error(index + ": field 'weight_map' lists tensor '" + duplicate_tensor + "' twice");
  std::vector<IndexEntry> out;
  for (auto it = map.begin(); it != map.end(); ++it) {
    const std::string field = "weight_map['" + it.key() + "']";
    if (!it->is_string()) throw Error(index + ": " + field + " must be a shard file name, got " + brief(*it));
    const std::string shard = it->get<std::string>();
    if (!plain_file_name(shard))
      throw Error(index + ": " + field + ": shard '" + shard +
                  "' is not a file name in the index's directory (no '/', '\\', '.' or '..')");
    out.push_back({it.key(), shard});
  }
  return out;
}

}  // namespace

Weights Weights::open_dir(const std::string& dir) {
  if (is_gguf_file(dir)) return *load_gguf(dir).weights;  // renamed to HF's names, as a family reads them
  const fs::path d(dir);
  static const char* const kSingle[] = {"model.safetensors", "pytorch_model.bin"};
  static const char* const kIndex[] = {"model.safetensors.index.json", "pytorch_model.bin.index.json"};
  std::error_code ec;
  for (int kind = 0; kind < 2; ++kind) {
    const fs::path single = d / kSingle[kind];
    if (fs::exists(single, ec)) return open_file(single.string());
    const fs::path index_path = d / kIndex[kind];
    if (!fs::exists(index_path, ec)) continue;
    const std::string index = index_path.string();
    return with_ordo_errors(index, [&] {
      const std::vector<IndexEntry> entries = read_index(index);
      std::set<std::string> shards;
      for (const IndexEntry& e : entries) {
        if (shards.count(e.shard)) continue;
        if (!fs::is_regular_file(d / e.shard, ec))
          throw Error(index + ": weight_map['" + e.tensor + "'] names shard '" + e.shard + "', which is missing from " +
                      dir);
        shards.insert(e.shard);
      }
      Weights w;
      w.origin_ = index;
      w.files_.push_back(index);
      for (const std::string& s : shards) w.add_file((d / s).string(), index, s);
      for (const IndexEntry& e : entries) {
        auto it = w.file_index_.find(e.tensor);
        if (it == w.file_index_.end())
          throw Error(index + ": weight_map puts tensor '" + e.tensor + "' in '" + e.shard +
                      "', which does not hold it");
        const std::string holder = fs::path(w.files_[it->second]).filename().string();
        if (holder != e.shard)
          throw Error(index + ": weight_map puts tensor '" + e.tensor + "' in '" + e.shard + "', but it is in '" +
                      holder + "'");
      }
      w.format_ = std::string(kind == 0 ? "safetensors" : "pytorch") + ", " + std::to_string(shards.size()) +
                  (shards.size() == 1 ? " shard" : " shards");
      return w;
    });
  }
  throw Error(dir +
              ": no weights: looked for model.safetensors, model.safetensors.index.json, pytorch_model.bin "
              "and pytorch_model.bin.index.json; " +
              listing(d));
}

void Weights::release_values(const Tensor& t) {
  if (!t.data) return;
  const auto* p = static_cast<const unsigned char*>(t.data);
  for (const MappedFile& m : mapped_)
    if (p >= m.begin && p < m.begin + m.size) return;
  for (auto& [name, entry] : tensors_)
    if (entry.data == t.data) {
      entry.owner.reset();
      entry.data = nullptr;
    }
}

const Tensor& Weights::get(const std::string& name) const {
  auto it = tensors_.find(name);
  if (it != tensors_.end()) return it->second;
  auto u = unsupported_.find(name);
  if (u != unsupported_.end()) throw Error(u->second);
  throw Error(origin_ + ": missing tensor '" + name + "'");
}

const std::string& Weights::file_of(const std::string& name) const {
  auto it = file_index_.find(name);
  return it == file_index_.end() ? origin_ : files_[it->second];
}

std::vector<std::string> Weights::names() const {
  std::vector<std::string> out;
  for (const auto& kv : tensors_) out.push_back(kv.first);
  return out;
}

}  // namespace ordo
