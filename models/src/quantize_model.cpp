// `ordo quantize`: a model directory copied with its linear weights stored in another dtype, as one
// model.safetensors whatever the input held (shards, pytorch_model.bin).
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <nlohmann/json.hpp>

#include "model_dir.hpp"
#include "weight_check.hpp"
#include "ordo/ordo.hpp"
#include "ordo/quantize.hpp"
#include "ordo/safetensors.hpp"

namespace fs = std::filesystem;

namespace ordo {

int quantize_model(const std::string& in_dir, const std::string& out_dir, DType dtype) {
  Loaded l = load_dir(in_dir);
  check_weights(l, l.spec, dtype, false);  // a NaN, Inf or F16 overflow is refused, not written
  const fs::path in(in_dir), out(out_dir);
  std::error_code ec;
  if (fs::exists(out) && fs::equivalent(in, out, ec)) throw Error(out_dir + ": output directory is the input directory");
  fs::create_directories(out, ec);
  if (ec) throw Error(out_dir + ": cannot create directory: " + ec.message());
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
  {
    std::ofstream f(out / "config.json");
    f << config.dump(2) << "\n";
    if (!f) throw Error((out / "config.json").string() + ": write failed");
  }
  // The input's weight files (shards, index, pytorch_model.bin) are replaced by model.safetensors.
  std::set<std::string> weight_files = {"model.safetensors", "config.json"};
  for (const std::string& f : l.weights->files()) weight_files.insert(fs::path(f).filename().string());
  for (const auto& e : fs::directory_iterator(in)) {
    const std::string fname = e.path().filename().string();
    if (!e.is_regular_file() || weight_files.count(fname)) continue;
    fs::copy_file(e.path(), out / fname, fs::copy_options::overwrite_existing, ec);
    if (ec) throw Error((out / fname).string() + ": cannot copy: " + ec.message());
  }
  return converted;
}

}  // namespace ordo
