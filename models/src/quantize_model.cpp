// `ordo quantize`: a model directory copied with its linear weights stored in another dtype, as one
// model.safetensors whatever the input held (shards, pytorch_model.bin).
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "model_dir.hpp"
#include "ordo/ordo.hpp"
#include "ordo/output_dir.hpp"
#include "ordo/output_file.hpp"
#include "ordo/quantize.hpp"
#include "ordo/safetensors.hpp"
#include "weight_check.hpp"

namespace fs = std::filesystem;

namespace ordo {

namespace {
int quantize_into(const std::string& in_dir, const OutputDir& dest, DType dtype, const QuantizeProgress& progress);
}  // namespace

int quantize_model(const std::string& in_dir, const std::string& out_dir, DType dtype, bool replace,
                   const QuantizeProgress& progress) {
  // Refusals first (output inside or linked into the input, a folder holding another model), then
  // everything is written into a new directory beside out_dir and swapped in at the end.
  OutputDir dest(out_dir, {in_dir}, replace, "ordo quantize");
  int converted = 0;
  try {
    converted = quantize_into(in_dir, dest, dtype, progress);
  } catch (const Error& e) {  // name the user's directory, not the hidden one being built
    std::string what = e.what();
    for (size_t at = 0; (at = what.find(dest.path(), at)) != std::string::npos; at += out_dir.size())
      what.replace(at, dest.path().size(), out_dir);
    throw Error(what);
  }
  dest.commit();
  return converted;
}

namespace {

int quantize_into(const std::string& in_dir, const OutputDir& dest, DType dtype, const QuantizeProgress& progress) {
  Loaded l = load_dir(in_dir, true);       // a GGUF file's Q4_K, Q6_K... as exact floats, then quantized once
  check_weights(l, l.spec, dtype, false);  // a NaN, Inf or F16 overflow is refused, not written
  const fs::path in(in_dir), out(dest.path());
  std::error_code ec;
  // Weights the spec uses exactly as fetched by name (not split, transposed or tied).
  std::map<std::string, const Linear*> convert;  // tensor name → the spec's Linear
  std::map<const void*, const Linear*> by_ptr;
  l.spec.for_each_linear([&](const Linear& lin) {
    if (lin.present()) by_ptr.emplace(lin.weight.data, &lin);
  });
  for (const auto& np : l.linear_names) {
    auto it = by_ptr.find(np.second);
    if (it != by_ptr.end()) convert[np.first] = it->second;
  }
  std::vector<std::pair<std::string, Tensor>> tensors;
  int converted = 0;
  for (const auto& kv : l.weights->tensors()) {
    const std::string& name = kv.first;
    if (name.size() > 7 && name.compare(name.size() - 7, 7, ".scales") == 0 &&
        convert.count(name.substr(0, name.size() - 7)))
      continue;  // scales of an I8 input weight: rewritten below if still I8
    auto it = convert.find(name);
    if (it == convert.end()) {
      tensors.emplace_back(name, kv.second);
      continue;
    }
    if (progress) progress(static_cast<size_t>(converted) + 1, convert.size(), name);
    Linear q = convert_linear(*it->second, dtype);
    tensors.emplace_back(name, q.weight);
    if (dtype == DType::I8) tensors.emplace_back(name + ".scales", q.scales);
    ++converted;
  }
  // Widest dtype first so every tensor starts aligned for its type (the header is padded to 8).
  std::stable_sort(tensors.begin(), tensors.end(), [](const auto& a, const auto& b) {
    return dtype_size(a.second.dtype) > dtype_size(b.second.dtype);
  });
  const std::string scheme = dtype == DType::I8 ? "per-row symmetric" : "cast";
  std::map<std::string, std::string> meta = l.weights->metadata();
  meta["ordo_quantization"] = weight_dtype_name(dtype);
  meta["ordo_quantization_scheme"] = scheme;
  write_safetensors((out / "model.safetensors").string(), tensors, meta);
  nlohmann::json config = JsonConfig::load((in / "config.json").string()).raw();
  config["ordo_quantization"] = {{"dtype", weight_dtype_name(dtype)}, {"scheme", scheme}};
  write_file_atomic((out / "config.json").string(), config.dump(2) + "\n");
  // The input's weight files (shards, index, pytorch_model.bin) are replaced by model.safetensors.
  std::set<std::string> weight_files = {"model.safetensors", "config.json"};
  for (const std::string& f : l.weights->files()) weight_files.insert(fs::path(f).filename().string());
  for (const auto& e : fs::directory_iterator(in)) {
    const std::string fname = e.path().filename().string();
    if (!e.is_regular_file() || weight_files.count(fname)) continue;
    std::ifstream src(e.path(), std::ios::binary);
    std::ostringstream bytes;
    bytes << src.rdbuf();
    if (!src) throw Error(e.path().string() + ": cannot read");
    write_file_atomic((out / fname).string(), bytes.str());
  }
  return converted;
}

}  // namespace

}  // namespace ordo
