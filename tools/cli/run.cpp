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
#include "generation_args.hpp"

namespace ordo::cli {
namespace {

struct RunCommand : Command {
  ModelArgs model;
  std::string prompt, ids_text, file;
  int batch = 16;
  GenerationArgs gen;
  bool print_ids = false, no_cache = false, no_special = false, quiet = false;
  bool chat = false;   // --chat: the prompt is a user turn of the model's chat template
  std::string system;  // --system: with --chat, a system turn before it

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
    gen.add(c, true);
    c->add_flag("--print-ids", print_ids, "Print the generated token ids (one line; beam search: one per returned hypothesis) after the text");
    c->add_flag("--no-cache", no_cache, "Recompute the whole sequence each step (reference mode)");
    c->add_flag("--no-special", no_special, "Do not add BOS/special tokens to the prompt");
    c->add_flag("-q,--quiet", quiet, "No timing line on stderr");
    auto* ch = c->add_flag("--chat", chat, "Apply the model's chat template: -p is a user turn; prints the reply");
    c->add_option("--system", system, "With --chat: a system message before the prompt")->needs(ch);
    ch->excludes(i)->excludes(f);
    return c;
  }

  void validate() const override {
    model.validate();
    if (batch < 1) throw Error("--batch must be at least 1, got " + std::to_string(batch));
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
    if (prompt.empty() && ids_text.empty() && file.empty())
      throw CLI::RequiredError("--prompt, --ids or --file");
    validate();
    Model m = model.load(ids_text.empty());
    const TextGenerateParams p = params(m);
    if (!file.empty()) return run_file(m, p);
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
      check_stdout(false);
      TextResult r = m.generate(prompt, p, [](const std::string& piece) {
        std::cout << piece << std::flush;
        check_stdout(false);  // a full disk stops the run now, naming stdout
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
    check_stdout(false);
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
