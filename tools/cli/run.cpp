// ordo run: text (or ids) in, generated text out, streamed token by token.
#include <iostream>
#include <random>

#include "common.hpp"

namespace ordo::cli {
namespace {

struct RunCommand : Command {
  ModelArgs model;
  std::string prompt, ids_text;
  std::vector<std::string> stops;
  int n = 128;
  float temp = 0.8f, top_p = 0.95f, repeat_penalty = 1.0f;
  int top_k = 40;
  int64_t seed = -1;
  bool print_ids = false, no_cache = false, no_special = false, quiet = false;

  CLI::App* add(CLI::App& app) override {
    CLI::App* c = app.add_subcommand("run", "Generate text from a prompt");
    model.add(c);
    auto* p = c->add_option("-p,--prompt", prompt, "Prompt text");
    auto* i = c->add_option("--ids", ids_text, "Prompt as token ids, e.g. 1,5,9 (instead of -p)");
    p->excludes(i);
    c->add_option("-n,--max-tokens", n, "Tokens to generate")->capture_default_str()->check(CLI::NonNegativeNumber);
    c->add_option("--temp", temp, "Temperature (0: greedy)")->capture_default_str()->check(CLI::NonNegativeNumber);
    c->add_option("--top-k", top_k, "Top-k (0: off)")->capture_default_str()->check(CLI::NonNegativeNumber);
    c->add_option("--top-p", top_p, "Top-p nucleus (1: off)")->capture_default_str()->check(CLI::Range(0.0f, 1.0f));
    c->add_option("--repeat-penalty", repeat_penalty, "Repetition penalty (1: off)")->capture_default_str();
    c->add_option("--seed", seed, "Sampling seed (default: random)");
    c->add_option("--stop", stops, "Stop string (repeatable)");
    c->add_flag("--print-ids", print_ids, "Print the generated token ids (one line) after the text");
    c->add_flag("--no-cache", no_cache, "Recompute the whole sequence each step (reference mode)");
    c->add_flag("--no-special", no_special, "Do not add BOS/special tokens to the prompt");
    c->add_flag("-q,--quiet", quiet, "No timing line on stderr");
    return c;
  }

  int run() override {
    if (prompt.empty() && ids_text.empty()) throw CLI::RequiredError("--prompt or --ids");
    Model m = model.load(ids_text.empty());
    TextGenerateParams p;
    p.max_new_tokens = n;
    p.sampling.temperature = temp;
    p.sampling.top_k = top_k;
    p.sampling.top_p = top_p;
    p.sampling.repetition_penalty = repeat_penalty;
    p.sampling.seed = seed >= 0 ? static_cast<uint64_t>(seed) : std::random_device{}();
    p.use_cache = !no_cache;
    p.stop_strings = stops;
    p.add_special = !no_special;
    GenerateResult g;
    if (!ids_text.empty()) {
      const std::vector<int32_t> ids = parse_ids(ids_text);
      g = m.generate_ids(ids, p);
      if (m.has_tokenizer()) std::cout << m.decode(g.ids) << "\n";
      print_ids = true;
    } else {
      if (m.spec().graph == GraphKind::Decoder) std::cout << prompt << std::flush;
      TextResult r = m.generate(prompt, p, [](const std::string& piece) {
        std::cout << piece << std::flush;
        return true;
      });
      std::cout << "\n";
      g = r.generation;
    }
    if (print_ids) std::cout << join_ids(g.ids) << "\n";
    if (!quiet) {
      const double steps = g.ids.empty() ? 0 : static_cast<double>(g.ids.size() - 1);
      std::cerr << "[prompt " << g.prompt_tokens << " tokens, " << g.prompt_tokens / std::max(g.prefill_seconds, 1e-9)
                << " tok/s; generated " << g.ids.size() << " tokens, " << steps / std::max(g.decode_seconds, 1e-9)
                << " tok/s]\n";
    }
    return 0;
  }
};

}  // namespace

std::unique_ptr<Command> make_run() { return std::make_unique<RunCommand>(); }

}  // namespace ordo::cli
