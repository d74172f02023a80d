// `ordo compare`'s models: the zoo's, every -m DIR and its --position ablations, and loading one.
#include "compare_models.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "zoo_index.hpp"

namespace fs = std::filesystem;

namespace ordo::cli {

std::string compare_zoo_dir(const std::string& zoo_flag) {
  if (!zoo_flag.empty()) return zoo_flag;
  if (const char* env = std::getenv("ORDO_ZOO_DIR")) return env;
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    fs::path installed = exe.parent_path().parent_path() / "share/ordo/models/zoo";
    if (fs::exists(installed)) return installed.string();
  }
  return ORDO_ZOO_DIR;
}

std::vector<CompareEntry> collect_entries(bool no_zoo, const std::string& zoo_flag,
                                          const std::vector<std::string>& dirs,
                                          const std::vector<std::string>& positions, std::string& zdir) {
  std::vector<CompareEntry> entries;
  if (!no_zoo) {
    zdir = compare_zoo_dir(zoo_flag);
    for (const ZooModel& z : discover_zoo(zdir))
      if (z.kind != "tasks")  // the synthetic-task models: the task probe's, not these
        entries.push_back({z.label, z.dir, "", z.kind, z.seed});
    if (entries.empty() && dirs.empty())
      throw Error("no zoo models under " + zdir + " (set --zoo or ORDO_ZOO_DIR, or give -m DIR with --no-zoo)");
  }
  for (const std::string& d : dirs) {
    std::string base = dir_label(d);
    const std::string name = base;
    // A zoo member given again with -m is not run twice (its ablations are still added).
    if (std::none_of(entries.begin(), entries.end(), [&](const CompareEntry& e) { return same_directory(e.dir, d); })) {
      for (int n = 2;
           std::any_of(entries.begin(), entries.end(), [&](const CompareEntry& e) { return e.label == base; }); ++n)
        base = name + "-" + std::to_string(n);
      entries.push_back({base, d, "", "", 0});
    }
    for (const std::string& p : positions) entries.push_back({base + "[pos=" + p + "]", d, p, "", 0});
  }
  if (entries.empty()) throw Error("no models to compare");
  return entries;
}

Model load_entry(const CompareEntry& e, ModelOptions o, std::string& tokenizer_error) {
  o.position = e.position;
  try {
    return Model::load(e.dir, o);
  } catch (const Error& err) {
    o.load_tokenizer = false;
    Model m = Model::load(e.dir, o);
    tokenizer_error = err.what();
    return m;
  }
}

}  // namespace ordo::cli
