// ordo tokenize: text → ids (one line), or ids → text with --decode.
#include <iostream>

#include "common.hpp"
#include "usage.hpp"

namespace ordo::cli {
namespace {

struct TokenizeCommand : Command {
  ModelArgs model;
  std::string input;
  bool decode = false, no_special = false, pieces = false;

  CLI::App* add(CLI::App& app) override {
    CLI::App* c = app.add_subcommand("tokenize", "Text to token ids, or ids to text with --decode");
    model.add(c, false);
    c->add_option("text", input, "Text to encode (or ids like 1,5,9 with --decode)")->required();
    c->add_flag("--decode", decode, "Decode ids to text");
    c->add_flag("--no-special", no_special, "Do not add BOS/EOS/special tokens");
    c->add_flag("--pieces", pieces, "Also print the token strings, one per line");
    return c;
  }

  void validate() const override {
    model.validate();
    if (decode) parse_ids(input);
  }

  int run() override {
    validate();
    check_model_dir("-m", model.resolved_dir(), false);
    std::unique_ptr<Tokenizer> tok = load_model_tokenizer(model.resolved_dir());
    if (decode) {
      std::cout << tok->decode(parse_ids(input)) << "\n";
      return 0;
    }
    const std::vector<int32_t> ids = tok->encode(input, !no_special);
    std::cout << join_ids(ids) << "\n";
    if (pieces)
      for (int32_t id : ids) std::cout << id << "\t" << tok->id_to_piece(id) << "\n";
    return 0;
  }
};

}  // namespace

std::unique_ptr<Command> make_tokenize() { return std::make_unique<TokenizeCommand>(); }

}  // namespace ordo::cli
