// Finding the zoo's models for `ordo compare`: ordo-zoo directories and their place in the experiment.
#include "zoo_index.hpp"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <tuple>

#include "ordo/input.hpp"
#include "ordo/ordo.hpp"

namespace fs = std::filesystem;

namespace ordo::cli {
using json = nlohmann::json;

std::string dir_label(const std::string& dir) {
  const fs::path p = fs::path(dir).lexically_normal();
  return p.filename().empty() ? p.parent_path().filename().string() : p.filename().string();
}

bool same_directory(const std::string& a, const std::string& b) {
  std::error_code ec1, ec2;
  return fs::weakly_canonical(a, ec1) == fs::weakly_canonical(b, ec2);
}

bool read_zoo_model(const fs::path& dir, const std::string& label, ZooModel& out) {
  const fs::path cfg_path = dir / "config.json";
  std::error_code ec;
  if (!fs::exists(cfg_path, ec)) return false;
  const std::string text = read_input_file(cfg_path.string(), kMaxJsonBytes, "a config.json");
  check_json_limits(text, cfg_path.string());
  const json cfg = json::parse(text, nullptr, false);
  if (cfg.is_discarded()) throw Error(cfg_path.string() + ": not valid JSON");
  if (!cfg.is_object() || cfg.value("model_type", json()) != "ordo-zoo") return false;
  const std::string where = cfg_path.string() + ": zoo";
  out = ZooModel{dir.string(), label, "lm", "", 1};
  if (!cfg.contains("zoo")) {
    if (!cfg.contains("position_scheme") || !cfg["position_scheme"].is_string())
      throw Error(cfg_path.string() + ": field 'position_scheme' missing or not a string");
    out.scheme = cfg["position_scheme"].get<std::string>();
    return true;
  }
  const json& z = cfg["zoo"];
  if (!z.is_object()) throw Error(where + ": must be an object {\"kind\", \"scheme\", \"seed\"}");
  for (const char* k : {"kind", "scheme"})
    if (!z.contains(k) || !z[k].is_string()) throw Error(where + ": field '" + k + "' missing or not a string");
  if (!z.contains("seed") || !z["seed"].is_number_integer() || z["seed"].get<int64_t>() < 0)
    throw Error(where + ": field 'seed' missing or not a non-negative integer");
  out.kind = z["kind"].get<std::string>();
  out.scheme = z["scheme"].get<std::string>();
  // The block places the model in the experiment; it must describe the model it sits in.
  if (cfg.value("position_scheme", json()) != out.scheme)
    throw Error(where + ": scheme '" + out.scheme + "' but position_scheme is " +
                cfg.value("position_scheme", json()).dump());
  if ((out.kind == "mlm") != (cfg.value("bidirectional", json(false)) == true))
    throw Error(where + ": kind '" + out.kind + "' but bidirectional is " +
                cfg.value("bidirectional", json(false)).dump() + " (mlm models, and only they, are bidirectional)");
  out.seed = z["seed"].get<int64_t>();
  if (z.contains("train_length")) {
    if (!z["train_length"].is_number_integer() || z["train_length"].get<int64_t>() < 1)
      throw Error(where + ": field 'train_length' must be a positive integer");
    out.train_length = z["train_length"].get<int64_t>();
  }
  return true;
}

namespace {

int kind_rank(const std::string& k) {
  const char* order[] = {"lm", "mlm", "tasks"};
  for (int i = 0; i < 3; ++i)
    if (k == order[i]) return i;
  return 3;
}

int scheme_rank(const std::string& s) {
  const std::vector<std::string> names = position_scheme_names();
  return static_cast<int>(std::find(names.begin(), names.end(), s) - names.begin());
}

}  // namespace

std::vector<ZooModel> discover_zoo(const std::string& root) {
  std::vector<ZooModel> out;
  std::error_code ec;
  const fs::path r(root);
  for (auto it = fs::recursive_directory_iterator(r, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (!it->is_directory(ec)) continue;
    if (it->path().filename().string().rfind('.', 0) == 0) {  // the trainer's unfinished .tmp-* outputs
      it.disable_recursion_pending();
      continue;
    }
    if (it.depth() >= 1) it.disable_recursion_pending();  // depth <= 2 below the root
    ZooModel m;
    if (read_zoo_model(it->path(), it->path().lexically_relative(r).generic_string(), m)) out.push_back(std::move(m));
  }
  std::sort(out.begin(), out.end(), [](const ZooModel& a, const ZooModel& b) {
    const auto key = [](const ZooModel& m) {
      return std::make_tuple(kind_rank(m.kind), m.kind, scheme_rank(m.scheme), m.scheme, m.seed, m.label);
    };
    return key(a) < key(b);
  });
  // Seeds are replicates: two models claiming one (kind, scheme, seed) would be averaged silently.
  for (size_t i = 1; i < out.size(); ++i)
    if (std::tie(out[i].kind, out[i].scheme, out[i].seed) ==
        std::tie(out[i - 1].kind, out[i - 1].scheme, out[i - 1].seed))
      throw Error(root + ": " + out[i - 1].label + " and " + out[i].label + " are both " + out[i].kind + " " +
                  out[i].scheme + " seed " + std::to_string(out[i].seed) + "; remove one");
  return out;
}

}  // namespace ordo::cli
