// Shared pieces of the `ordo` subcommands: model options, id lists, output files.
#pragma once

#include <CLI/CLI.hpp>
#include <climits>
#include <optional>
#include <string>
#include <vector>

#include "ordo/ordo.hpp"
#include "ordo/output_file.hpp"
#include "stdout_stream.hpp"

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
  std::string dtype;                     // --dtype f32|f16|bf16|int8 ("" keeps the stored weights)
  std::string kv_dtype;                  // "": the model's default (Transformer::default_kv_dtype)
  int64_t max_context = 0;               // -c/--ctx-size (0: the model's default limit)
  CLI::Option* factor_opt = nullptr;     // --factor was given (any value, even 0, must be checked)
  std::string self_extend;               // --self-extend G,W
  std::optional<int64_t> sinks, window;  // --sinks K --window N
  bool allow_nonfinite = false;          // --allow-nonfinite: NaN/Inf weights warned about, not refused

  void add(CLI::App* app, bool with_position = true);
  // Checks every flag's value (Error naming the flag); options() and load() call it.
  void validate() const;
  std::string resolved_dir() const;  // -m, else the bundled default model
  ModelOptions options() const;
  // Model::load with options(); prints each of its load_warnings() to stderr ("ordo: warning: ...").
  Model load(bool tokenizer = true) const;
};

// --self-extend G,W / --sinks K --window N as a ContextExtension (nullopt when none is given);
// Error naming the flag for anything malformed or out of range.
std::optional<ContextExtension> parse_extension(const std::string& self_extend, std::optional<int64_t> sinks,
                                                std::optional<int64_t> window);

// "1,5,9" or "1 5 9" → ids; Error naming the bad entry ("1,,2" has an empty one).
std::vector<int32_t> parse_ids(const std::string& text);
// The content of a file named on the command line: regular files only (a FIFO is refused, not
// waited on), at most kMaxInputTextBytes.
constexpr uint64_t kMaxInputTextBytes = uint64_t{1} << 30;
std::string read_input_text(const std::string& path);
// Error "<flag> must be ..." unless lo <= v <= hi (NaN fails).
void check_flag_range(const char* flag, double v, double lo, double hi);
std::string join_ids(const std::vector<int32_t>& ids, const char* sep = ",");

// Writes a float32 array as .npy (NumPy format 1.0), atomically (OutputFile).
void write_npy(const std::string& path, const Tensor& t);

// A subcommand: registers its options, then runs if selected.
struct Command {
  virtual ~Command() = default;
  virtual CLI::App* add(CLI::App& app) = 0;
  // Checks the parsed flags without loading a model or reading input files (Error naming the
  // flag); run() calls it first. The fuzzer calls it on its own.
  virtual void validate() const {}
  virtual int run() = 0;
};

// The `ordo` command line: every subcommand registered on one CLI11 app.
struct CliApp {
  CLI::App app{"ordo: a small transformer inference engine with pluggable position schemes"};
  std::vector<std::unique_ptr<Command>> commands;
  std::vector<CLI::App*> subs;
  CliApp();
  // Parses argv (argv[0] is the program name); throws CLI::ParseError (incl. help/version requests).
  // Returns the selected command, nullptr if none.
  Command* parse(int argc, const char* const* argv);
};

std::unique_ptr<Command> make_run();
std::unique_ptr<Command> make_tokenize();
std::unique_ptr<Command> make_inspect();
std::unique_ptr<Command> make_forward();
std::unique_ptr<Command> make_ppl();
std::unique_ptr<Command> make_sweep();
std::unique_ptr<Command> make_embed();
std::unique_ptr<Command> make_compare();
std::unique_ptr<Command> make_bench();
std::unique_ptr<Command> make_quantize();
std::unique_ptr<Command> make_chat();
std::unique_ptr<Command> make_serve();

// One assistant turn (chat.cpp): renders `messages` with the model's chat template, generates until
// an end-of-turn id (Model::chat_stop_ids) or params.max_new_tokens, streams the reply to stdout
// (then a newline) and returns its text; *result gets the generation's ids and timings.
std::string chat_turn(const Model& m, const std::vector<ChatMessage>& messages, const GenerateParams& params,
                      GenerateResult* result = nullptr);

}  // namespace ordo::cli
