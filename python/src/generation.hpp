// ordo.Model's prompts (text or token ids), generation keyword arguments and results, and the
// batched generation behind generate, generate_batch and the streamer's settings.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bindings.hpp"

namespace ordo::py {

struct Prompt {
  std::string text;
  std::optional<std::vector<int32_t>> ids;
};

// str or bytes: text; any other sequence: token ids. ValueError naming `what` otherwise.
Prompt to_prompt(const pyb::handle& o, const SharedModel& sm, const std::string& what);
// One prompt (*single) or a list of them.
std::vector<Prompt> to_prompts(const pyb::handle& o, const SharedModel& sm, const std::string& what, bool* single);

struct GenArgs {
  TextGenerateParams params;
  int logprobs = 0;
};

// The generation keyword arguments, range-checked (ValueError naming the argument).
GenArgs gen_args(int max_new_tokens, double temperature, int top_k, double top_p, double min_p, double repeat_penalty,
                 std::optional<int64_t> seed, const pyb::object& stop, int logprobs, bool add_special);

struct Generation {
  std::string text;
  std::vector<int32_t> ids;
  std::optional<std::vector<double>> logprobs;
  std::optional<std::vector<std::vector<std::pair<int32_t, double>>>> top_logprobs;
  std::string finish_reason;  // "stop" (end of sequence, a stop string or stopped), "length"
  int64_t prompt_tokens = 0;
  double prefill_seconds = 0, decode_seconds = 0;
};

// Generates for every prompt (all texts or all id lists), max_batch at a time, without the GIL.
std::vector<Generation> run_generate(const SharedModel& sm, const std::vector<Prompt>& prompts, const GenArgs& a,
                                     int max_batch);

}  // namespace ordo::py
