// Shared pieces of the `ordo` subcommands: model options, id lists, output files.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "ordo/ordo.hpp"

namespace ordo::cli {

// -m/--model, --backend, --dtype, --kv-dtype, --position, --scaling/--factor/--original-max, --threads.
struct ModelArgs {
  std::string dir;
  std::string backend = "onednn";
  std::string position;
  std::string scaling;
  double factor = 0;
  int64_t original_max = 0;
  int threads = 0;
  std::string dtype;  // --dtype f32|f16|bf16|int8 ("" keeps the stored weights)
  std::string kv_dtype = "f32";
  bool prepack = false;

  void add(CLI::App* app, bool with_position = true);
  std::string resolved_dir() const;  // -m, else the bundled default model
  ModelOptions options() const;
  Model load(bool tokenizer = true) const;
};

// "1,5,9" or "1 5 9" → ids; Error naming the bad entry.
std::vector<int32_t> parse_ids(const std::string& text);
std::string join_ids(const std::vector<int32_t>& ids, const char* sep = ",");

// Writes a float32 array as .npy (NumPy format 1.0).
void write_npy(const std::string& path, const Tensor& t);

// A subcommand: registers its options, then runs if selected.
struct Command {
  virtual ~Command() = default;
  virtual CLI::App* add(CLI::App& app) = 0;
  virtual int run() = 0;
};

std::unique_ptr<Command> make_run();
std::unique_ptr<Command> make_tokenize();
std::unique_ptr<Command> make_inspect();
std::unique_ptr<Command> make_forward();
std::unique_ptr<Command> make_ppl();
std::unique_ptr<Command> make_embed();
std::unique_ptr<Command> make_compare();
std::unique_ptr<Command> make_bench();
std::unique_ptr<Command> make_quantize();

}  // namespace ordo::cli
