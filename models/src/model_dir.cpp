// A model directory read into a ModelSpec: config.json picks the family, whose file builds the spec
// from the directory's weights (ordo/weights.hpp: safetensors or PyTorch, one file or shards); a
// GGUF file instead of a directory goes to load_gguf.
#include "model_dir.hpp"

#include <filesystem>

#include "ordo/ordo.hpp"
#include "ordo/quantize.hpp"
#include "weights/gguf.hpp"

namespace fs = std::filesystem;

namespace ordo {

namespace {

JsonConfig load_optional_json(const fs::path& p) {
  if (fs::exists(p)) return JsonConfig::load(p.string());
  return JsonConfig::parse("{}", p.string());
}

}  // namespace

const Family& family_for(const std::string& model_type, const std::string& where) {
  std::string known;
  for (const Family& f : families())
    for (const char* t : f.model_types) {
      if (model_type == t) return f;
      known += (known.empty() ? "" : ", ") + std::string(t);
    }
  throw Error(where + ": model_type '" + model_type + "' is not supported (known: " + known + ")");
}

void build_into(Loaded& out, const Family& fam, FamilyContext& ctx) {
  out.spec = fam.build(ctx);
  out.family = fam.name;
  out.linear_names = ctx.linear_names();
  out.fetched_names = ctx.fetched_names();
  out.weights = std::make_shared<Weights>(ctx.weights());
}

Loaded load_dir(const std::string& dir, bool decoded_as_f32) {
  const fs::path d(dir);
  if (is_gguf_file(dir)) return load_gguf(dir, decoded_as_f32);
  if (!fs::is_directory(d)) throw Error(dir + ": not a model directory");
  const fs::path config_path = d / "config.json";
  if (!fs::exists(config_path))
    throw Error(config_path.string() + ": missing (every model directory needs config.json)");
  JsonConfig config = JsonConfig::load(config_path.string());
  const std::string model_type = config.get_string("model_type");
  const Family* fam = &family_for(model_type, config_path.string());
  Loaded out;
  if (config.has("ordo_quantization")) {
    const auto& q = config.raw().at("ordo_quantization");
    if (!q.is_object() || !q.contains("dtype") || !q.at("dtype").is_string())
      throw Error(config_path.string() + ": 'ordo_quantization' must be an object with a string 'dtype'");
    out.stored_dtype = parse_weight_dtype(q.at("dtype").get<std::string>());
  }
  FamilyContext ctx(std::move(config), Weights::open_dir(dir), load_optional_json(d / "generation_config.json"));
  build_into(out, *fam, ctx);
  return out;
}

}  // namespace ordo
