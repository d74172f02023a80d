// ordo embed: the encoder's output for a text (or ids) as a vector, JSON on stdout by default.
//
//   --pooled (default): one vector [d_model]. Models with a pooler (BERT) give tanh(pooler(h[0]));
//                       models without one (T5, Marian, ...) give the mean of the token vectors
//                       over the attention mask (every token of the input: no padding here).
//   --tokens:           one vector per token [T, d_model] (the encoder's last hidden state).
// Encoder-decoder models use their encoder's output; decoder-only models have no encoder.
// -o out.json writes the JSON to a file, -o out.npy the bare float32 array.
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "common.hpp"

namespace ordo::cli {
namespace {

// JSON with keys in insertion order and float numbers (float32 values print in their shortest
// round-trip form).
using fjson = nlohmann::basic_json<nlohmann::ordered_map, std::vector, std::string, bool, std::int64_t,
                                   std::uint64_t, float>;

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

fjson row_json(const float* v, int64_t n) {
  fjson a = fjson::array();
  for (int64_t i = 0; i < n; ++i) a.push_back(v[i]);
  return a;
}

struct EmbedCommand : Command {
  ModelArgs model;
  std::string text, ids_text, types_text, out;
  bool pooled = false, tokens = false, no_special = false;

  CLI::App* add(CLI::App& app) override {
    CLI::App* c = app.add_subcommand("embed",
                                     "Encoder output for a text or ids: pooled vector (pooler, else mean "
                                     "over tokens) or per-token vectors");
    model.add(c, false);
    auto* t = c->add_option("text", text, "Text to embed");
    auto* i = c->add_option("--ids", ids_text, "Token ids instead of text, e.g. 101,7592,102");
    t->excludes(i);
    c->add_option("--token-types", types_text,
                  "Token type (segment) ids, one per token (BERT; default all 0)");
    auto* p =
        c->add_flag("--pooled", pooled,
                    "One vector: the pooler output, or the mean over tokens without a pooler (default)");
    auto* k = c->add_flag("--tokens", tokens, "One vector per token (the encoder's last hidden state)");
    p->excludes(k);
    c->add_flag("--no-special", no_special, "Do not add special tokens ([CLS]/[SEP], EOS) to the text");
    c->add_option("-o,--output", out, "Write to a file: .json (same JSON as stdout) or .npy (float32 array)");
    return c;
  }

  int run() override {
    if (text.empty() && ids_text.empty()) throw CLI::RequiredError("text or --ids");
    if (!out.empty() && !ends_with(out, ".json") && !ends_with(out, ".npy"))
      throw Error("--output must end in .json or .npy, got " + out);
    Model m = model.load(ids_text.empty());
    const ModelSpec& spec = m.spec();
    if (spec.graph == GraphKind::Decoder)
      throw Error(spec.architecture +
                  " is a decoder-only model: embed needs an encoder (encoder or encoder-decoder model)");
    const std::vector<int32_t> ids = ids_text.empty() ? m.encode(text, !no_special) : parse_ids(ids_text);
    if (ids.empty()) throw Error("nothing to embed: no tokens");
    const std::vector<int32_t> types = parse_ids(types_text);
    if (!types.empty() && types.size() != ids.size())
      throw Error("--token-types has " + std::to_string(types.size()) + " entries for " +
                  std::to_string(ids.size()) + " tokens");
    const std::vector<uint8_t> mask(ids.size(), 1);
    const Tensor h = m.engine().encode(ids, types, mask);
    const int64_t T = h.dim(0), d = h.dim(1);

    Tensor result;
    std::string pooling;
    if (tokens) {
      result = h;
    } else if (spec.pooler.present()) {
      result = m.engine().pool(h);
      pooling = "pooler";
    } else {
      result = Tensor::zeros({d});
      int64_t n = 0;
      for (int64_t t = 0; t < T; ++t) {
        if (!mask[t]) continue;
        ++n;
        for (int64_t i = 0; i < d; ++i) result.f32()[i] += h.f32()[t * d + i];
      }
      for (int64_t i = 0; i < d; ++i) result.f32()[i] /= static_cast<float>(n);
      pooling = "mean";
    }

    if (ends_with(out, ".npy")) {
      write_npy(out, result);
      std::cerr << "wrote " << result.shape_str() << " to " << out << "\n";
      return 0;
    }
    fjson j;
    j["model"] = m.dir();
    j["family"] = m.family();
    j["mode"] = tokens ? "tokens" : "pooled";
    if (!tokens) j["pooling"] = pooling;
    j["dim"] = d;
    j["ids"] = ids;
    if (tokens) {
      fjson rows = fjson::array();
      for (int64_t t = 0; t < T; ++t) rows.push_back(row_json(h.f32() + t * d, d));
      j["embeddings"] = std::move(rows);
    } else {
      j["embedding"] = row_json(result.f32(), d);
    }
    if (out.empty()) {
      std::cout << j.dump() << "\n";
    } else {
      std::ofstream f(out);
      if (!f) throw Error(out + ": cannot open for writing");
      f << j.dump() << "\n";
      if (!f) throw Error(out + ": write failed");
      std::cerr << "wrote " << result.shape_str() << " to " << out << "\n";
    }
    return 0;
  }
};

}  // namespace

std::unique_ptr<Command> make_embed() { return std::make_unique<EmbedCommand>(); }

}  // namespace ordo::cli
