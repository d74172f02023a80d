// ordo forward: logits (and hidden states) for given ids, written as .npy or .safetensors so
// anyone can hold ordo against another implementation.
#include <iostream>

#include "common.hpp"
#include "ordo/finite.hpp"
#include "ordo/safetensors.hpp"

namespace ordo::cli {
namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

struct ForwardCommand : Command {
  ModelArgs model;
  std::string ids_text, decoder_ids_text, out;
  bool hidden = false;

  CLI::App* add(CLI::App& app) override {
    CLI::App* c = app.add_subcommand("forward", "Write logits (and hidden states) for token ids");
    model.add(c);
    c->add_option("--ids", ids_text, "Input ids, e.g. 1,5,9 (encoder input for encoder-decoder models)")->required();
    c->add_option("--decoder-ids", decoder_ids_text, "Decoder input ids (encoder-decoder models)");
    c->add_option("-o,--output", out, "Output file: .npy (logits) or .safetensors (logits + hidden states)")
        ->required();
    c->add_flag("--hidden", hidden, "Also write every hidden state");
    return c;
  }

  void validate() const override {
    model.validate();
    parse_ids(ids_text);
    parse_ids(decoder_ids_text);
  }

  int run() override {
    validate();
    const bool npy = ends_with(out, ".npy");
    if (!npy && !ends_with(out, ".safetensors")) throw Error("--output must end in .npy or .safetensors, got " + out);
    check_output_path(out, {model.resolved_dir()});
    Model m = model.load(false);
    const std::vector<int32_t> ids = parse_ids(ids_text);
    std::vector<std::pair<std::string, Tensor>> tensors;
    const GraphKind g = m.spec().graph;
    if (g == GraphKind::EncoderDecoder) {
      if (decoder_ids_text.empty())
        throw Error(m.spec().architecture + " is an encoder-decoder model: give --decoder-ids");
      std::vector<Tensor> enc_hidden;
      ForwardOutput o = m.forward_seq2seq(ids, parse_ids(decoder_ids_text), hidden, hidden ? &enc_hidden : nullptr);
      tensors.push_back({"logits", o.logits});
      for (size_t i = 0; i < enc_hidden.size(); ++i)
        tensors.push_back({"encoder_hidden_states." + std::to_string(i), enc_hidden[i]});
      for (size_t i = 0; i < o.hidden.size(); ++i)
        tensors.push_back({"decoder_hidden_states." + std::to_string(i), o.hidden[i]});
    } else {
      if (!decoder_ids_text.empty()) throw Error("--decoder-ids is only for encoder-decoder models");
      ForwardOutput o = m.forward(ids, hidden || g == GraphKind::Encoder);
      if (g == GraphKind::Encoder)
        tensors.push_back({"last_hidden_state", o.hidden.back()});
      else
        tensors.push_back({"logits", o.logits});
      if (hidden)
        for (size_t i = 0; i < o.hidden.size(); ++i)
          tensors.push_back({"hidden_states." + std::to_string(i), o.hidden[i]});
    }
    if (npy) {
      const std::string stem = out.substr(0, out.size() - 4);
      for (size_t i = 1; i < tensors.size(); ++i)
        check_output_outside_inputs(stem + "." + tensors[i].first + ".npy", {model.resolved_dir()});
      write_npy(out, tensors[0].second);
      for (size_t i = 1; i < tensors.size(); ++i) write_npy(stem + "." + tensors[i].first + ".npy", tensors[i].second);
    } else {
      write_safetensors(out, tensors, {{"format", "pt"}, {"producer", "ordo"}});
    }
    std::cerr << "wrote " << tensors.size() << " tensor(s) to " << out
              << (npy && tensors.size() > 1 ? " (+ siblings)" : "") << "\n";
    // forward is for looking at values, so NaN ones are written as they are; but a run that made
    // them failed: say where the first one is and exit non-zero.
    for (const auto& [name, t] : tensors) {
      const int64_t i = first_nonfinite(t);
      if (i < 0) continue;
      const int64_t cols = t.ndim() >= 2 ? t.dim(-1) : t.numel();
      check_finite_row(t.f32() + i / cols * cols, cols, i / cols, name);
    }
    return 0;
  }
};

}  // namespace

std::unique_ptr<Command> make_forward() { return std::make_unique<ForwardCommand>(); }

}  // namespace ordo::cli
