// ordo run: text (or ids) in, generated text out, streamed token by token (or one JSON object); or
// many prompts from a file, generated in batches, printed in input order. Settings: flags, else the model's
// generation_config.json, else ordo's defaults (Model::generation_params).
#include <chrono>
#include <cmath>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "common.hpp"
#include "generation_args.hpp"
#include "usage.hpp"

namespace ordo::cli {
namespace {

struct RunCommand : Command {
  ModelArgs model;
  std::string prompt, ids_text, prompt_file, file;  // prompt_file: -f (one prompt); file: --prompts-file
  int batch = 16;
  bool json = false;
  GenerationArgs gen;
  bool print_ids = false, no_cache = false, no_special = false, quiet = false;
  bool chat = false;   // --chat: the prompt is a user turn of the model's chat template
  std::string system;  // --system: with --chat, a system turn before it

  CLI::App* add(CLI::App& app) override {
    CLI::App* c = app.add_subcommand("run", "Generate text from a prompt");
    model.add(c);
    auto* p = c->add_option("-p,--prompt", prompt, "Prompt text");
    auto* i = c->add_option("--ids", ids_text, "Prompt as token ids, e.g. 1,5,9 (instead of -p)");
    auto* pf = c->add_option("-f,--file", prompt_file,
                             "Read the prompt from a file, all of it (lines included); -f - reads it from stdin");
    auto* f =
        c->add_option("--prompts-file", file,
                      "Many prompts: one per non-empty line, or a .jsonl file of {\"prompt\": ...} lines; "
                      "results in input order (.jsonl: one JSON line each, with \"text\" and \"ids\"; beam search adds "
                      "\"sequences\": [{\"text\", \"ids\", \"score\"}], best first)");
    p->excludes(i)->excludes(pf);
    pf->excludes(i);
    f->excludes(p)->excludes(i)->excludes(pf);
    c->add_option("--parallel", batch, "With --prompts-file: sequences in flight at once (each beam is one)")
        ->capture_default_str();
    add_alias(c, "--batch", batch, "--parallel");
    auto* js = c->add_flag("--json", json,
                           "Print one JSON object: prompt, ids, text, tokens, timings, seed and settings (no "
                           "streaming)");
    js->excludes(f);
    gen.add(c, true);
    c->add_flag("--print-ids", print_ids,
                "Print the generated token ids (one line; beam search: one per returned hypothesis) after the text");
    c->add_flag("--no-cache", no_cache, "Recompute the whole sequence each step (reference mode)");
    c->add_flag("--no-special", no_special, "Do not add BOS/special tokens to the prompt");
    c->add_flag("-q,--quiet", quiet, "No settings, seed or timing lines on stderr");
    auto* ch = c->add_flag("--chat", chat, "Apply the model's chat template: -p is a user turn; prints the reply");
    c->add_option("--system", system, "With --chat: a system message before the prompt")->needs(ch);
    ch->excludes(i)->excludes(f)->excludes(js);
    c->footer(
        "The prompt comes from -p TEXT, -f FILE (-f - for stdin) or --ids; --prompts-file runs many. A sampled "
        "run prints 'seed: N' on stderr: -s N repeats it.");
    return c;
  }

  void validate() const override {
    model.validate();
    if (batch < 1) throw Error("--parallel must be at least 1, got " + std::to_string(batch));
    if (prompt_file.size() > 6 && prompt_file.compare(prompt_file.size() - 6, 6, ".jsonl") == 0)
      throw Error("-f reads one prompt from a file; for a .jsonl of prompts give --prompts-file " + prompt_file);
    gen.validate();
    if (chat && !gen.stops.empty())
      throw Error("--stop: with --chat a reply ends at the model's EOS and end-of-turn tokens; give --stop-id");
    if (!ids_text.empty()) {
      try {
        if (parse_ids(ids_text).empty()) throw Error("no token ids");
      } catch (const Error& e) {
        throw Error(std::string("--ids: ") + e.what());
      }
    }
  }

  int run() override {
    validate();
    if (!prompt_file.empty()) prompt = prompt_file == "-" ? read_stdin_prompt() : read_input_text(prompt_file);
    if (prompt.empty() && ids_text.empty() && file.empty())
      throw UsageError(prompt_file.empty()
                           ? "no prompt: give -p TEXT, -f FILE (-f - for stdin), --ids or --prompts-file"
                           : "-f " + prompt_file + ": the prompt is empty");
    Model m = model.load(ids_text.empty());
    const TextGenerateParams p = params(m);
    if (!file.empty()) return run_file(m, p);
    if (json) return run_json(m, p);
    GenerateResult g;
    const std::string shown_prompt = m.spec().graph == GraphKind::Decoder ? prompt : std::string();
    if (chat) {
      std::vector<ChatMessage> messages;
      if (!system.empty()) messages.push_back({"system", system});
      messages.push_back({"user", prompt});
      chat_turn(m, messages, p, &g);
    } else if (!ids_text.empty()) {
      const std::vector<int32_t> ids = parse_ids(ids_text);
      g = m.generate_ids(ids, p);
      if (m.has_tokenizer()) std::cout << m.decode(g.ids) << "\n";
      for (size_t k = 1; k < g.sequences.size() && m.has_tokenizer(); ++k)
        std::cout << m.decode(g.sequences[k].ids) << "\n";
      print_ids = true;
    } else {
      std::cout << shown_prompt << std::flush;
      check_stdout();
      TextResult r = m.generate(prompt, p, [](const std::string& piece) {
        std::cout << piece << std::flush;
        check_stdout();  // a full disk stops the run now, naming stdout
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
      std::cerr << "[prompt " << g.prompt_tokens << " tokens, " << g.prompt_tokens / std::max(g.prefill_seconds, 1e-9)
                << " tok/s; generated " << g.ids.size() << " tokens, " << steps / std::max(g.decode_seconds, 1e-9)
                << " tok/s]\n";
    }
    return 0;
  }

  // The prompt of `-f -`: all of stdin, with one trailing newline dropped (as from `echo`).
  static std::string read_stdin_prompt() {
    std::string text;
    char buf[1 << 16];
    while (std::cin.read(buf, sizeof buf) || std::cin.gcount() > 0) {
      text.append(buf, static_cast<size_t>(std::cin.gcount()));
      if (text.size() > kMaxInputTextBytes) throw Error("-f -: stdin holds more than 1 GiB");
    }
    if (!text.empty() && text.back() == '\n') text.pop_back();
    if (!text.empty() && text.back() == '\r') text.pop_back();
    return text;
  }

  // --json: one generation, printed as one JSON object once it is done.
  int run_json(const Model& m, const TextGenerateParams& p) const {
    GenerateResult g;
    std::vector<std::string> texts;
    nlohmann::ordered_json j;
    j["model"] = model.resolved_dir();
    if (!ids_text.empty()) {
      const std::vector<int32_t> ids = parse_ids(ids_text);
      g = m.generate_ids(ids, p);
      j["prompt_ids"] = ids;
      if (m.has_tokenizer()) j["text"] = m.decode(g.ids);
    } else {
      TextResult r = m.generate(prompt, p);
      g = r.generation;
      j["prompt"] = prompt;
      j["text"] = r.text;
      texts = r.texts;
    }
    j["ids"] = g.ids;
    j["tokens"] = {{"prompt", g.prompt_tokens}, {"generated", g.ids.size()}};
    const double steps = g.ids.empty() ? 0 : static_cast<double>(g.ids.size() - 1);
    j["timings"] = {{"prefill_seconds", g.prefill_seconds},
                    {"decode_seconds", g.decode_seconds},
                    {"prefill_tokens_per_second", g.prompt_tokens / std::max(g.prefill_seconds, 1e-9)},
                    {"decode_tokens_per_second", steps / std::max(g.decode_seconds, 1e-9)}};
    const bool sampled = p.sampling.temperature > 0 && p.beams.num_beams <= 1;
    j["seed"] = sampled ? nlohmann::ordered_json(p.sampling.seed) : nlohmann::ordered_json(nullptr);
    // Settings as given (0.8, not float's 0.800000011920929).
    const auto decimal = [](float v) { return std::round(static_cast<double>(v) * 1e6) / 1e6; };
    j["settings"] = {{"max_new_tokens", p.max_new_tokens},
                     {"decoding", p.beams.num_beams > 1 ? "beam search"
                                  : sampled             ? "sampling"
                                                        : "greedy"},
                     {"temperature", decimal(p.sampling.temperature)},
                     {"top_k", p.sampling.top_k},
                     {"top_p", decimal(p.sampling.top_p)},
                     {"min_p", decimal(p.sampling.min_p)},
                     {"repetition_penalty", decimal(p.sampling.repetition_penalty)},
                     {"num_beams", p.beams.num_beams}};
    for (size_t k = 0; k < g.sequences.size(); ++k) {
      nlohmann::ordered_json s = {{"ids", g.sequences[k].ids}, {"score", g.sequences[k].score}};
      if (k < texts.size()) s["text"] = texts[k];
      j["sequences"].push_back(s);
    }
    std::cout << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return 0;
  }

  // The flags given, over the model's generation_config.json, over the defaults; stderr (unless
  // -q) names each setting used and its source.
  TextGenerateParams params(const Model& m) const {
    TextGenerateParams p = gen.params(m, quiet);
    p.use_cache = !no_cache;
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
          j["sequences"].push_back({{"text", r.texts[k]},
                                    {"ids", r.generation.sequences[k].ids},
                                    {"score", r.generation.sequences[k].score}});
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
    check_stdout();
    if (!quiet)
      std::cerr << "[" << prompts.size() << " prompts, up to " << batch << " in flight; generated " << generated
                << " tokens in " << seconds << " s, " << generated / std::max(seconds, 1e-9) << " tok/s]\n";
    return 0;
  }
};

}  // namespace

std::unique_ptr<Command> make_run() { return std::make_unique<RunCommand>(); }

}  // namespace ordo::cli
