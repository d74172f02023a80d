// Shared pieces of the `ordo` subcommands: model options, id lists, output files.
#include "common.hpp"

#include "ordo/input.hpp"
#include "ordo/quantize.hpp"
#include "ordo/version.hpp"
#include "usage.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

namespace fs = std::filesystem;

namespace ordo::cli {

void ModelArgs::add(CLI::App* app, bool with_position) {
  app->add_option("-m,--model", dir,
                  "Model directory (config.json, model.safetensors, tokenizer); default: bundled stories260K");
  app->add_option("--backend", backend, "GEMM backend: openblas or onednn")
      ->capture_default_str()
      ->check(CLI::IsMember({"openblas", "onednn"}, CLI::ignore_case));
  app->add_option("-t,--threads", threads, "Threads (0: all cores)")->capture_default_str();
  app->add_option("-c,--ctx-size", max_context,
                  "Context size: most positions a sequence may hold (default: 16x the trained length)");
  add_alias(app, "--max-context", max_context, "-c/--ctx-size");
  app->add_option("--dtype", dtype, "Store linear weights as f32, f16, bf16, int8, q8_0 or q4_0 (converted at load)")
      ->check(CLI::IsMember({"f32", "f16", "bf16", "int8", "q8_0", "q4_0"}, CLI::ignore_case));
  app->add_option("--kv-dtype", kv_dtype,
                  "KV cache storage: f32 (exact), f16 (half the memory, ~3 digits) or int8 (a quarter, ~2 digits); "
                  "default f16 for q8_0/q4_0/q4_k weights, else f32")
      ->check(CLI::IsMember({"f32", "f16", "int8"}, CLI::ignore_case));
  app->add_flag("--allow-nonfinite", allow_nonfinite,
                "Load weights holding NaN or Inf (a warning names each such tensor; a run stops at the first "
                "non-finite logits)");
  if (!with_position) return;
  std::string schemes;
  for (const std::string& n : position_scheme_names()) schemes += (schemes.empty() ? "" : ", ") + n;
  app->add_option("--position", position, "Replace the model's position scheme: " + schemes);
  app->add_option("--scaling", scaling,
                  "Long-context scaling: none, linear, ntk, dynamic, yarn, llama3, longrope (replaces config.json's)");
  factor_opt = app->add_option("--factor", factor, "Scaling factor (e.g. 4 for 4x the trained length)");
  app->add_option("--original-max", original_max, "Trained length the scaling starts from (default: the model's)");
  app->add_option("--self-extend", self_extend,
                  "Self-Extend G,W: keys within W tokens at their exact distance, farther ones at positions "
                  "grouped by G (reaches about W + G*(trained - W) tokens)");
  app->add_option("--sinks", sinks, "Attention sinks: keep the first K tokens in the cache (with --window N)");
  app->add_option("--window", window,
                  "Attention sinks: keep the N most recent tokens (cache of K + N; generation at constant memory)");
}

std::optional<ContextExtension> parse_extension(const std::string& self_extend, std::optional<int64_t> sinks,
                                                std::optional<int64_t> window) {
  if (self_extend.empty() && !sinks && !window) return std::nullopt;
  ContextExtension e;
  if (!self_extend.empty()) {
    const size_t comma = self_extend.find(',');
    auto number = [&](const std::string& part) -> int64_t {
      char* end = nullptr;
      errno = 0;
      const long long v = std::strtoll(part.c_str(), &end, 10);
      if (part.empty() || *end != '\0' || errno != 0 || v < 1 || v > kMaxExtensionValue)
        throw Error("--self-extend: expected G,W (group size and neighbour window, integers in [1, " +
                    std::to_string(kMaxExtensionValue) + "]), got '" + self_extend + "'");
      return v;
    };
    if (comma == std::string::npos) number("");
    e.group = number(self_extend.substr(0, comma));
    e.neighbor = number(self_extend.substr(comma + 1));
  }
  if (sinks || window) {
    if (!window) throw Error("--sinks needs --window N (the recent tokens kept beside the K sinks)");
    if (!sinks) throw Error("--window needs --sinks K (0 for a plain sliding window)");
    check_flag_range("--sinks", static_cast<double>(*sinks), 0, static_cast<double>(kMaxExtensionValue));
    check_flag_range("--window", static_cast<double>(*window), 1, static_cast<double>(kMaxExtensionValue));
    e.sinks = *sinks;
    e.window = *window;
  }
  check_context_extension(e);
  return e;
}

std::string ModelArgs::resolved_dir() const {
  if (!dir.empty()) return dir;
  if (const char* env = std::getenv("ORDO_DEFAULT_MODEL")) return env;
  // Installed layout: <prefix>/bin/ordo and <prefix>/share/ordo/models/stories260K.
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    fs::path installed = exe.parent_path().parent_path() / "share/ordo/models/stories260K";
    if (fs::exists(installed / "config.json")) return installed.string();
  }
  return ORDO_DEFAULT_MODEL_DIR;
}

void ModelArgs::validate() const {
  check_flag_range("-t/--threads", threads, 0, kMaxThreads);
  check_flag_range("-c/--ctx-size", static_cast<double>(max_context), 0, 9.0e15);
  if (!position.empty()) check_position_name("--position", position);
  if (!scaling.empty()) check_scaling_name("--scaling", scaling);
  if (original_max < 0) throw Error("--original-max must be >= 0, got " + std::to_string(original_max));
  if (factor_opt && factor_opt->count() > 0) {
    if (!(factor > 0 && factor <= kMaxScalingFactor))
      throw Error("--factor must be in (0, " + std::to_string(static_cast<int>(kMaxScalingFactor)) + "], got " +
                  std::to_string(factor));
    if (scaling.empty()) throw Error("--factor and --original-max need --scaling TYPE");
  }
  parse_extension(self_extend, sinks, window);
}

ModelOptions ModelArgs::options() const {
  validate();
  ModelOptions o;
  o.context_limit = max_context;
  o.backend = parse_backend(backend);
  o.threads = threads;
  o.position = position;
  if (!dtype.empty()) o.dtype = parse_weight_dtype(dtype);
  if (!kv_dtype.empty()) o.kv_dtype = parse_weight_dtype(kv_dtype);
  o.allow_nonfinite = allow_nonfinite;
  o.extension = parse_extension(self_extend, sinks, window);
  if (!scaling.empty() || (factor_opt && factor_opt->count() > 0) || original_max != 0) {
    if (scaling.empty()) throw Error("--factor and --original-max need --scaling TYPE");
    Scaling s;
    s.type = parse_scaling(scaling);
    s.factor = factor_opt && factor_opt->count() > 0 ? factor : 1.0;
    s.original_max_positions = original_max;
    if (s.type != ScalingType::None && s.factor < 1.0 && s.type != ScalingType::Linear)
      throw Error("--factor must be >= 1 for " + scaling + " scaling, got " + std::to_string(s.factor));
    if (s.factor <= 0) throw Error("--factor must be positive, got " + std::to_string(s.factor));
    o.scaling = s;
  }
  return o;
}

Model ModelArgs::load(bool tokenizer) const {
  ModelOptions o = options();
  o.load_tokenizer = tokenizer;
  const std::string d = resolved_dir();
  check_model_dir("-m", d);
  Model m = Model::load(d, o);
  for (const std::string& w : m.load_warnings()) std::cerr << "ordo: warning: " << w << "\n";
  return m;
}

std::vector<int32_t> parse_ids(const std::string& text) {
  std::vector<int32_t> ids;
  const bool has_comma = text.find(',') != std::string::npos;
  std::istringstream fields(text);
  std::string field;
  // getline drops a trailing empty field: "1," is caught by the check after the loop.
  while (std::getline(fields, field, ',')) {
    std::istringstream words(field);
    std::string item;
    size_t n = 0;
    for (; words >> item; ++n) {
      char* end = nullptr;
      errno = 0;
      const long v = std::strtol(item.c_str(), &end, 10);
      if (*end != '\0' || errno != 0 || v < INT32_MIN || v > INT32_MAX)
        throw Error("token id '" + item + "' is not an integer");
      ids.push_back(static_cast<int32_t>(v));
    }
    // "1,,2" or ",1": an empty entry is a typo, not a shorter list.
    if (n == 0 && has_comma) throw Error("id list '" + text + "' has an empty entry");
  }
  if (has_comma && text.find_last_not_of(" \t\n") != std::string::npos && text[text.find_last_not_of(" \t\n")] == ',')
    throw Error("id list '" + text + "' has an empty entry");
  return ids;
}

std::string read_input_text(const std::string& path) {
  return read_input_file(path, kMaxInputTextBytes, "an input file");
}

void check_flag_range(const char* flag, double v, double lo, double hi) {
  if (!(v >= lo && v <= hi)) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "%s must be in [%g, %g], got %g", flag, lo, hi, v);
    throw Error(buf);
  }
}

CliApp::CliApp() {
  app.name("ordo");
  app.set_version_flag("--version", ordo::version());
  app.footer(
      "ordo help CMD (or ordo CMD --help) for the flags of one command. Exit codes: 0 ok, 2 usage error, 1 runtime "
      "error.");
  app.require_subcommand(1);
  commands.push_back(make_run());
  commands.push_back(make_tokenize());
  commands.push_back(make_inspect());
  commands.push_back(make_forward());
  commands.push_back(make_ppl());
  commands.push_back(make_embed());
  commands.push_back(make_compare());
  commands.push_back(make_bench());
  commands.push_back(make_quantize());
  commands.push_back(make_chat());
  commands.push_back(make_serve());
  commands.push_back(make_sweep());
  for (auto& c : commands) subs.push_back(c->add(app));
}

Command* CliApp::parse(int argc, const char* const* argv) {
  std::vector<std::string> args = rewrite_args(app, argc, argv);
  if (!args.empty()) args.erase(args.begin());  // the program name
  std::reverse(args.begin(), args.end());       // CLI11 takes the arguments last first
  app.parse(args);
  for (size_t i = 0; i < commands.size(); ++i)
    if (subs[i]->parsed()) return commands[i].get();
  return nullptr;
}

std::string join_ids(const std::vector<int32_t>& ids, const char* sep) {
  std::string s;
  for (size_t i = 0; i < ids.size(); ++i) s += (i ? sep : "") + std::to_string(ids[i]);
  return s;
}

void write_npy(const std::string& path, const Tensor& t) {
  std::string shape = "(";
  for (size_t i = 0; i < t.shape.size(); ++i) shape += (i ? ", " : "") + std::to_string(t.shape[i]);
  shape += t.shape.size() == 1 ? ",)" : ")";
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }";
  // magic (6) + version (2) + header length (2) + header, padded with spaces to a multiple of 64, ending in \n
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  const uint16_t len = static_cast<uint16_t>(header.size());
  std::string head("\x93NUMPY\x01\x00", 8);
  head += static_cast<char>(len & 0xff);
  head += static_cast<char>(len >> 8);
  head += header;
  Tensor c = t.dtype == DType::F32 ? t : t.to_f32();
  OutputFile f(path);
  f.write(head);
  f.write(c.data, c.nbytes());
  f.commit();
}

}  // namespace ordo::cli
