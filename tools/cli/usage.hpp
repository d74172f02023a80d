// Usage errors in a user's words: did-you-mean, number lists, scheme names, -m diagnosis, aliases.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "ordo/ordo.hpp"

namespace ordo::cli {

// A mistake in the command line itself (a flag's value, a missing argument): exit code 2, where a
// failure while running (a file, a model) is 1.
class UsageError : public Error {
 public:
  using Error::Error;
};

// The candidate closest to `word` by edit distance, "" when none is close enough to be a typo.
std::string nearest(const std::string& word, const std::vector<std::string>& candidates);
// " (did you mean X?)" for the nearest candidate, else "".
std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates);

// Hidden spellings kept for scripts: `name` writes `target` as the flag it stands for does.
template <typename T>
CLI::Option* add_alias(CLI::App* app, const std::string& name, T& target, const std::string& stands_for) {
  return app->add_option(name, target, "Old spelling of " + stands_for)->group("");
}

// "512,1024" → {512, 1024}; UsageError "<flag>: 'abc' is not a whole number" for a bad entry.
std::vector<int64_t> parse_int_list(const std::string& flag, const std::string& text);
// UsageError naming the flag, the value and the nearest known scheme unless `name` is one.
void check_position_name(const std::string& flag, const std::string& name);
// The same for a --scaling type (none, linear, ntk, ...).
void check_scaling_name(const std::string& flag, const std::string& name);

// Error saying what `dir` is when it is not a model directory (nothing there, a file, a directory
// without config.json, a tokenizer without a model); returns quietly for a directory holding
// config.json (any directory when !need_config: a tokenizer-only one serves `ordo tokenize`) or for
// a GGUF file. A
// runtime error (exit 1), as every file a flag names that cannot be used.
void check_model_dir(const std::string& flag, const std::string& dir, bool need_config = true);

// The message for a CLI11 parse error, reworded where CLI11's own is unclear (conversion errors,
// unknown flags with the nearest one of the subcommand). argv: the command line as given.
std::string usage_message(CLI::App& app, const CLI::ParseError& e);

// argv as the parser should see it: `ordo help [CMD]` → `ordo [CMD] --help`. Throws UsageError for
// an unknown subcommand, suggesting the nearest one.
std::vector<std::string> rewrite_args(const CLI::App& app, int argc, const char* const* argv);

}  // namespace ordo::cli
