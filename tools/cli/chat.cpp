// ordo chat: a conversation with an instruct model through its chat template: user turns from
// stdin (one per line; /exit or end of input ends it), each reply streamed as it is generated and
// kept in the history the next turn's prompt is rendered from. Also the one-turn helper behind
// `ordo run --chat`.
#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <random>

#include "common.hpp"
#include "generation_args.hpp"

namespace ordo::cli {

std::string chat_turn(const Model& m, const std::vector<ChatMessage>& messages, const GenerateParams& params,
                      GenerateResult* result) {
  const std::vector<int32_t> prompt = m.encode_chat(messages, true);
  GenerateParams p = params;
  if (p.stop_ids.empty()) p.stop_ids = m.spec().eos_ids;
  for (int32_t id : m.chat_stop_ids())
    if (std::find(p.stop_ids.begin(), p.stop_ids.end(), id) == p.stop_ids.end()) p.stop_ids.push_back(id);
  // The reply alone, as transformers' TextStreamer and decode(new ids, skip_special_tokens=True)
  // show it (no leading space carried over from the prompt).
  StreamDecoder stream(m.tokenizer(), {}, true);
  std::string reply;
  GenerateResult g = m.generate_ids(prompt, p, [&](int32_t id) {
    if (std::find(p.stop_ids.begin(), p.stop_ids.end(), id) != p.stop_ids.end()) return false;
    const std::string piece = stream.push(id);
    reply += piece;
    std::cout << piece << std::flush;
    check_stdout();
    return true;
  });
  const std::string rest = stream.flush();
  reply += rest;
  std::cout << rest << "\n" << std::flush;
  if (result) *result = std::move(g);
  return reply;
}

namespace {

struct ChatCommand : Command {
  ModelArgs model;
  std::string system;
  GenerationArgs gen;
  bool quiet = false;

  CLI::App* add(CLI::App& app) override {
    CLI::App* c = app.add_subcommand(
        "chat", "Converse with an instruct model through its chat template (user turns from stdin, one per line)");
    model.add(c);
    c->add_option("--system", system, "System message opening the conversation");
    gen.add(c, false);
    c->add_flag("-q,--quiet", quiet, "No timing line per reply on stderr");
    return c;
  }

  void validate() const override {
    model.validate();
    gen.validate();
    if (!gen.stops.empty())
      throw Error("--stop: ordo chat ends a reply at the model's EOS and end-of-turn tokens; give --stop-id");
  }

  int run() override {
    validate();
    Model m = model.load(true);
    if (m.spec().graph != GraphKind::Decoder) throw Error(m.dir() + ": ordo chat needs a decoder-only model");
    m.chat_template();  // no template: the Error naming tokenizer_config.json, before any input is read
    const TextGenerateParams p = gen.params(m, quiet);
    std::vector<ChatMessage> history;
    if (!system.empty()) history.push_back({"system", system});
    const bool interactive = isatty(STDIN_FILENO) != 0;
    std::string line;
    for (;;) {
      if (interactive) std::cerr << "> " << std::flush;
      if (!std::getline(std::cin, line)) break;
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line == "/exit" || line == "/quit") break;
      if (line.find_first_not_of(" \t") == std::string::npos) continue;
      history.push_back({"user", line});
      GenerateResult g;
      history.push_back({"assistant", chat_turn(m, history, p, &g)});
      if (!quiet)
        std::cerr << "[prompt " << g.prompt_tokens << " tokens; reply " << g.ids.size() << " tokens, "
                  << static_cast<double>(g.ids.size()) / std::max(g.prefill_seconds + g.decode_seconds, 1e-9)
                  << " tok/s]\n";
    }
    return 0;
  }
};

}  // namespace

std::unique_ptr<Command> make_chat() { return std::make_unique<ChatCommand>(); }

}  // namespace ordo::cli
