// ordo run: text (or ids) in, generated text out, streamed token by token; or many prompts from a
// file, generated in batches, printed in input order. Settings: flags, else the model's
// generation_config.json, else ordo's defaults (Model::generation_params).
#include <chrono>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "common.hpp"

namespace ordo::cli {
namespace {

struct RunCommand : Command {
  ModelArgs model;
  std::string prompt, ids_text, file;
  int batch = 16;
  std::vector<std::string> stops;
  std::vector<int32_t> stop_ids;
  int n = 128;
  float temp = 0.8f, top_p = 0.95f, repeat_penalty = 1.0f;
  int top_k = 40;
  int num_beams = 1, num_return = 1;
  double length_penalty = 1.0;
  std::string early_stopping;
  int64_t seed = -1;
  // The settings flags, to tell a flag given from its default.
  CLI::Option *n_opt = nullptr, *temp_opt = nullptr, *top_k_opt = nullptr, *top_p_opt = nullptr,
              *penalty_opt = nullptr, *beams_opt = nullptr, *lp_opt = nullptr, *es_opt = nullptr,
              *return_opt = nullptr;
  bool print_ids = false, no_cache = false, no_special = false, quiet = false;

  CLI::App* add(CLI::App& app) override {
    CLI::App* c = app.add_subcommand("run", "Generate text from a prompt");
    model.add(c);
    auto* p = c->add_option("-p,--prompt", prompt, "Prompt text");
    auto* i = c->add_option("--ids", ids_text, "Prompt as token ids, e.g. 1,5,9 (instead of -p)");
    auto* f =
        c->add_option("-f,--file", file,
                      "Many prompts: one per non-empty line, or a .jsonl file of {\"prompt\": ...} lines; "
                      "results in input order (.jsonl: one JSON line each, with \"text\" and \"ids\"; beam search adds "
                      "\"sequences\": [{\"text\", \"ids\", \"score\"}], best first)");
    p->excludes(i);
    f->excludes(p)->excludes(i);
    c->add_option("--batch", batch, "With -f: sequences in flight at once (each beam is one)")->capture_default_str();
    // Settings left unset come from the model's generation_config.json (max_new_tokens or
    // max_length, do_sample, temperature, top_k, top_p, repetition_penalty, num_beams, ...), else
    // from the defaults shown; stderr says which were used and where each came from.
    const std::string from_config = " (default: generation_config.json's, else ";
    n_opt = c->add_option("-n,--max-tokens", n, "Tokens to generate" + from_config + "128)")
                ->check(CLI::NonNegativeNumber);
    temp_opt = c->add_option("--temp", temp,
                             "Temperature; 0: greedy, > 0: sampling (default: generation_config.json's "
                             "do_sample/temperature/num_beams, else sampling at 0.8)")
                   ->check(CLI::NonNegativeNumber);
    top_k_opt = c->add_option("--top-k", top_k, "Top-k, 0: off" + from_config + "40)")->check(CLI::NonNegativeNumber);
    top_p_opt =
        c->add_option("--top-p", top_p, "Top-p nucleus, 1: off" + from_config + "0.95)")->check(CLI::Range(0.0f, 1.0f));
    penalty_opt = c->add_option("--repeat-penalty", repeat_penalty, "Repetition penalty, 1: off" + from_config + "1)");
    beams_opt = c->add_option("--num-beams", num_beams, "Beam search with N beams, 1: off" + from_config + "1)")
                    ->check(CLI::PositiveNumber);
    lp_opt = c->add_option("--length-penalty", length_penalty,
                           "Beam search: hypotheses score sum logprob / length^X" + from_config + "1)");
    es_opt = c->add_option("--early-stopping", early_stopping,
                           "Beam search, as Hugging Face: true (or no value): stop once num_beams hypotheses are "
                           "done; never: only when none can improve; false: a heuristic" + from_config + "false)")
                 ->expected(0, 1)
                 ->type_name("[true|false|never]");
    return_opt = c->add_option("--num-return-sequences", num_return,
                               "Beam search: print the K best hypotheses" + from_config + "1)")
                     ->check(CLI::PositiveNumber);
    c->add_option("--seed", seed, "Sampling seed (default: random)");
    c->add_option("--stop", stops, "Stop string (repeatable); the text ends before it");
    c->add_option("--stop-id", stop_ids,
                  "Stop token id (repeatable, or comma-separated), besides the model's EOS ids; its text is not "
                  "printed")
        ->delimiter(',');
    c->add_flag("--print-ids", print_ids, "Print the generated token ids (one line; beam search: one per returned hypothesis) after the text");
    c->add_flag("--no-cache", no_cache, "Recompute the whole sequence each step (reference mode)");
    c->add_flag("--no-special", no_special, "Do not add BOS/special tokens to the prompt");
    c->add_flag("-q,--quiet", quiet, "No timing line on stderr");
    return c;
  }

  void validate() const override {
    model.validate();
    if (batch < 1) throw Error("--batch must be at least 1, got " + std::to_string(batch));
    check_flag_range("--temp", temp, 0, 1e30);
    check_flag_range("--top-p", top_p, 1e-30, 1);
    check_flag_range("--repeat-penalty", repeat_penalty, 1e-30, 1e30);
    check_flag_range("--length-penalty", length_penalty, -1e30, 1e30);
    if (*es_opt && !early_stopping.empty() && early_stopping != "true" && early_stopping != "false" &&
        early_stopping != "never")
      throw Error("--early-stopping must be true, false or never, got '" + early_stopping + "'");
    for (int32_t id : stop_ids)
      if (id < 0) throw Error("--stop-id must be a token id >= 0, got " + std::to_string(id));
    if (!ids_text.empty()) {
      try {
        if (parse_ids(ids_text).empty()) throw Error("no token ids");
      } catch (const Error& e) {
        throw Error(std::string("--ids: ") + e.what());
      }
    }
  }

  int run() override {
    if (prompt.empty() && ids_text.empty() && file.empty())
      throw CLI::RequiredError("--prompt, --ids or --file");
    validate();
    Model m = model.load(ids_text.empty());
    const TextGenerateParams p = params(m);
    if (!file.empty()) return run_file(m, p);
    GenerateResult g;
    const std::string shown_prompt = m.spec().graph == GraphKind::Decoder ? prompt : std::string();
    if (!ids_text.empty()) {
      const std::vector<int32_t> ids = parse_ids(ids_text);
      g = m.generate_ids(ids, p);
      if (m.has_tokenizer()) std::cout << m.decode(g.ids) << "\n";
      for (size_t k = 1; k < g.sequences.size() && m.has_tokenizer(); ++k)
        std::cout << m.decode(g.sequences[k].ids) << "\n";
      print_ids = true;
    } else {
      std::cout << shown_prompt << std::flush;
      TextResult r = m.generate(prompt, p, [](const std::string& piece) {
        std::cout << piece << std::flush;
        return true;
      });
      std::cout << "\n";
      for (size_t k = 1; k < r.texts.size(); ++k) std::cout << shown_prompt << r.texts[k] << "\n";
      g = r.generation;
    }
    if (print_ids) {
      if (g.sequences.empty()) std::cout << join_ids(g.ids) << "\n";
      for (const ScoredSequence& s : g.sequences) std::cout << join_ids(s.ids) << "\n";
    }
    if (!quiet && !g.sequences.empty()) {
      std::cerr << "[beam scores:";
      for (const ScoredSequence& s : g.sequences) std::cerr << " " << s.score;
      std::cerr << "]\n";
    }
    if (!quiet) {
      const double steps = g.ids.empty() ? 0 : static_cast<double>(g.ids.size() - 1);
      std::cerr << "[prompt " << g.prompt_tokens << " tokens, "
                << g.prompt_tokens / std::max(g.prefill_seconds, 1e-9) << " tok/s; generated " << g.ids.size()
                << " tokens, " << steps / std::max(g.decode_seconds, 1e-9) << " tok/s]\n";
    }
    return 0;
  }

  // The flags given, over the model's generation_config.json, over the defaults; stderr (unless
  // -q) names each setting used and its source.
  TextGenerateParams params(const Model& m) const {
    GenerationConfig flags;
    if (*n_opt) flags.max_new_tokens = n;
    if (*temp_opt) flags.temperature = temp;
    if (*top_k_opt) flags.top_k = top_k;
    if (*top_p_opt) flags.top_p = top_p;
    if (*penalty_opt) flags.repetition_penalty = repeat_penalty;
    if (*beams_opt) flags.num_beams = num_beams;
    if (*lp_opt) flags.length_penalty = length_penalty;
    if (*es_opt)
      flags.early_stopping = early_stopping == "never"   ? EarlyStopping::Never
                             : early_stopping == "false" ? EarlyStopping::Heuristic
                                                         : EarlyStopping::OnFull;
    if (*return_opt) flags.num_return_sequences = num_return;
    std::vector<GenerationSetting> used;
    TextGenerateParams p = m.generation_params(flags, &used);
    if (!quiet) {
      std::cerr << "[settings:";
      for (size_t i = 0; i < used.size(); ++i)
        std::cerr << (i ? ", " : " ") << used[i].name << " " << used[i].value << " (" << used[i].source << ")";
      std::cerr << "]\n";
    }
    if (!stop_ids.empty()) {
      p.stop_ids = m.spec().eos_ids;
      p.stop_ids.insert(p.stop_ids.end(), stop_ids.begin(), stop_ids.end());
    }
    p.sampling.seed = seed >= 0 ? static_cast<uint64_t>(seed) : std::random_device{}();
    p.use_cache = !no_cache;
    p.stop_strings = stops;
    p.add_special = !no_special;
    return p;
  }

  // The prompts of `file`: its non-empty lines, or for .jsonl each line's "prompt".
  std::vector<std::string> read_prompts() const {
    std::istringstream in(read_input_text(file));
    const bool jsonl = file.size() >= 6 && file.compare(file.size() - 6, 6, ".jsonl") == 0;
    std::vector<std::string> prompts;
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.find_first_not_of(" \t") == std::string::npos) continue;
      if (!jsonl) {
        prompts.push_back(line);
        continue;
      }
      const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
      const std::string where = file + ":" + std::to_string(n);
      if (j.is_discarded()) throw Error(where + ": not valid JSON");
      if (!j.is_object() || !j.contains("prompt")) throw Error(where + ": no \"prompt\" field");
      if (!j.at("prompt").is_string()) throw Error(where + ": \"prompt\" is not a string");
      prompts.push_back(j.at("prompt").get<std::string>());
    }
    if (prompts.empty()) throw Error(file + ": no prompts (the file has no non-empty line)");
    return prompts;
  }

  // Generates every prompt of the file with up to --batch in flight; each result is printed as
  // soon as it and all before it are complete.
  int run_file(const Model& m, const TextGenerateParams& p) {
    const bool jsonl = file.size() >= 6 && file.compare(file.size() - 6, 6, ".jsonl") == 0;
    const std::vector<std::string> prompts = read_prompts();
    const bool decoder = m.spec().graph == GraphKind::Decoder;
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<TextResult> results = m.generate_batch(prompts, p, batch);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    int64_t generated = 0;
    for (size_t i = 0; i < prompts.size(); ++i) {
      const TextResult& r = results[i];
      generated += static_cast<int64_t>(r.generation.ids.size());
      if (jsonl) {
        nlohmann::json j = {{"prompt", prompts[i]}, {"text", r.text}, {"ids", r.generation.ids}};
        // Beam search: every returned hypothesis with its score, best first.
        for (size_t k = 0; k < r.generation.sequences.size(); ++k)
          j["sequences"].push_back(
              {{"text", r.texts[k]}, {"ids", r.generation.sequences[k].ids}, {"score", r.generation.sequences[k].score}});
        std::cout << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
      } else {
        const std::string shown = decoder ? prompts[i] : std::string();
        std::cout << shown << r.text << "\n";
        for (size_t k = 1; k < r.texts.size(); ++k) std::cout << shown << r.texts[k] << "\n";
        if (print_ids && r.generation.sequences.empty()) std::cout << join_ids(r.generation.ids) << "\n";
        if (print_ids)
          for (const ScoredSequence& s : r.generation.sequences) std::cout << join_ids(s.ids) << "\n";
      }
    }
    std::cout << std::flush;
    if (!quiet)
      std::cerr << "[" << prompts.size() << " prompts, up to " << batch << " in flight; generated "
                << generated << " tokens in " << seconds << " s, " << generated / std::max(seconds, 1e-9)
                << " tok/s]\n";
    return 0;
  }
};

}  // namespace

std::unique_ptr<Command> make_run() { return std::make_unique<RunCommand>(); }

}  // namespace ordo::cli
