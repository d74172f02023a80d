// ordo embed: a text (or ids) as a vector (Model::embed), JSON on stdout by default.
//
//   --pooled (default): one vector [d_model], pooled by --pooling mean|cls|last|pooler from the
//                       last hidden state, --normalize to unit length. Unset: the directory's
//                       sentence-transformers choice, else mean (encoders) or last (decoder-only).
//   --tokens:           one vector per token [T, d_model] (the last hidden state).
// Encoder-decoder models use their encoder's output, decoder-only models their final hidden state.
// -o out.json writes the JSON to a file, -o out.npy the bare float32 array.
// -f FILE embeds many inputs, --batch at a time in one encoder forward: a text per non-empty line,
// or a .jsonl file of {"text": ...} or {"ids": [...], "token_types": [...]} lines; one JSON line
// per input on stdout (or -o .jsonl), in input order, or -o out.npy with the pooled vectors [n, d].
#include <climits>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common.hpp"
#include "progress.hpp"
#include "usage.hpp"

namespace ordo::cli {
namespace {

// JSON with keys in insertion order and float numbers (float32 values print in their shortest
// round-trip form).
using fjson =
    nlohmann::basic_json<nlohmann::ordered_map, std::vector, std::string, bool, std::int64_t, std::uint64_t, float>;

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

fjson row_json(const float* v, int64_t n) {
  fjson a = fjson::array();
  for (int64_t i = 0; i < n; ++i) a.push_back(v[i]);
  return a;
}

// One input: its ids and token types (empty: all 0), and the text it came from (if any).
struct Input {
  std::string text;
  std::vector<int32_t> ids, types;
};

struct EmbedCommand : Command {
  ModelArgs model;
  std::string text, ids_text, types_text, out, file, pooling;
  bool pooled = false, tokens = false, no_special = false, normalize = false, no_normalize = false;
  int batch = 16;
  EmbedOptions options;  // resolved once the model is loaded

  CLI::App* add(CLI::App& app) override {
    CLI::App* c = app.add_subcommand("embed",
                                     "Embedding of a text or ids: one pooled vector (default) or per-token "
                                     "vectors of the last hidden state");
    model.add(c, false);
    auto* t = c->add_option("text", text, "Text to embed");
    auto* i = c->add_option("--ids", ids_text, "Token ids instead of text, e.g. 101,7592,102");
    t->excludes(i);
    auto* f = c->add_option("-f,--file", file,
                            "Many inputs: a text per non-empty line, or .jsonl lines {\"text\": ...} or "
                            "{\"ids\": [...], \"token_types\": [...]}; one JSON line per input, in order");
    f->excludes(t)->excludes(i);
    c->add_option("--batch-inputs", batch, "With -f: inputs per forward")->capture_default_str();
    add_alias(c, "--batch", batch, "--batch-inputs");
    c->add_option("--token-types", types_text, "Token type (segment) ids, one per token (BERT; default all 0)");
    auto* p = c->add_flag("--pooled", pooled, "One vector per input, as --pooling says (default)");
    auto* k = c->add_flag("--tokens", tokens, "One vector per token (the last hidden state)");
    p->excludes(k);
    c->add_option("--pooling", pooling,
                  "mean (over the tokens, as sentence-transformers), cls (first token), last (last token), "
                  "pooler (the model's pooler: BERT). Default: the directory's sentence-transformers "
                  "pooling, else mean for encoders and last for decoder-only models (BERT's default "
                  "was its pooler before: --pooling pooler)")
        ->check(CLI::IsMember({"mean", "cls", "last", "pooler"}))
        ->excludes(k);
    auto* n = c->add_flag("--normalize", normalize,
                          "Scale each vector to unit L2 length (default: when the directory's "
                          "sentence-transformers modules normalize)");
    n->excludes(k);
    c->add_flag("--no-normalize", no_normalize, "Do not normalize, whatever the directory says")
        ->excludes(n)
        ->excludes(k);
    c->add_flag("--no-special", no_special, "Do not add special tokens ([CLS]/[SEP], BOS/EOS) to the text");
    c->add_option("-o,--output", out, "Write to a file: .json (same JSON as stdout) or .npy (float32 array)");
    return c;
  }

  void validate() const override {
    model.validate();
    if (batch < 1) throw Error("--batch-inputs must be at least 1, got " + std::to_string(batch));
    parse_ids(ids_text);
    parse_ids(types_text);
  }

  int run() override {
    validate();
    if (text.empty() && ids_text.empty() && file.empty())
      throw UsageError("nothing to embed: give a text, --ids or -f FILE");
    if (!out.empty() && !ends_with(out, ".json") && !ends_with(out, ".npy") &&
        !(ends_with(out, ".jsonl") && !file.empty()))
      throw Error("--output must end in .json or .npy (.jsonl with --file), got " + out);
    if (!out.empty()) check_output_path(out, {model.resolved_dir()});
    std::vector<Input> inputs = file.empty() ? std::vector<Input>{} : read_inputs();
    bool need_tokenizer = ids_text.empty() && file.empty();
    for (const Input& in : inputs) need_tokenizer = need_tokenizer || in.ids.empty();
    Model m = model.load(need_tokenizer);
    if (!tokens) options = m.embed_options(requested_options());
    if (!file.empty()) {
      for (Input& in : inputs)
        if (in.ids.empty()) in.ids = m.encode(in.text, !no_special);
      return run_file(m, inputs);
    }
    Input in;
    in.ids = ids_text.empty() ? m.encode(text, !no_special) : parse_ids(ids_text);
    in.types = parse_ids(types_text);
    check(in, "");
    const std::vector<EncodeRequest> req = {EncodeRequest{in.ids, in.types, {}}};
    Tensor result = tokens ? m.last_hidden_states(req)[0] : m.embed_ids(req, options);
    if (!tokens) result.shape = {result.dim(1)};
    if (ends_with(out, ".npy")) {
      write_npy(out, result);
      std::cerr << "wrote " << result.shape_str() << " to " << out << "\n";
      return 0;
    }
    const fjson j = to_json(m, in, result);
    if (out.empty()) {
      std::cout << j.dump() << "\n";
    } else {
      write_file_atomic(out, j.dump() + "\n");
      std::cerr << "wrote " << result.shape_str() << " to " << out << "\n";
    }
    return 0;
  }

  static void check(const Input& in, const std::string& where) {
    if (in.ids.empty()) throw Error(where + "nothing to embed: no tokens");
    if (!in.types.empty() && in.types.size() != in.ids.size())
      throw Error(where + "token types have " + std::to_string(in.types.size()) + " entries for " +
                  std::to_string(in.ids.size()) + " tokens");
  }

  // The flags as EmbedOptions (unset: the model's default).
  EmbedOptions requested_options() const {
    EmbedOptions o;
    if (pooling == "mean") o.pooling = Pooling::Mean;
    if (pooling == "cls") o.pooling = Pooling::Cls;
    if (pooling == "last") o.pooling = Pooling::Last;
    if (pooling == "pooler") o.pooling = Pooling::Pooler;
    if (normalize || no_normalize) o.normalize = normalize;
    o.batch = batch;
    return o;
  }

  // result: the pooled vector [d], or the token vectors [T, d] (--tokens).
  fjson to_json(const Model& m, const Input& in, const Tensor& result) const {
    const int64_t d = result.dim(-1);
    fjson j;
    j["model"] = m.dir();
    j["family"] = m.family();
    j["mode"] = tokens ? "tokens" : "pooled";
    if (!tokens) {
      j["pooling"] = pooling_name(*options.pooling);
      j["normalized"] = *options.normalize;
    }
    j["dim"] = d;
    if (!in.text.empty()) j["text"] = in.text;
    j["ids"] = in.ids;
    if (tokens) {
      fjson rows = fjson::array();
      for (int64_t t = 0; t < result.dim(0); ++t) rows.push_back(row_json(result.f32() + t * d, d));
      j["embeddings"] = std::move(rows);
    } else {
      j["embedding"] = row_json(result.f32(), d);
    }
    return j;
  }

  // The file's inputs; texts are encoded once the model is loaded.
  std::vector<Input> read_inputs() const {
    std::istringstream f(read_input_text(file));
    const bool jsonl = ends_with(file, ".jsonl");
    std::vector<Input> inputs;
    std::string line;
    for (int n = 1; std::getline(f, line); ++n) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.find_first_not_of(" \t") == std::string::npos) continue;
      const std::string where = file + ":" + std::to_string(n) + ": ";
      Input in;
      if (!jsonl) {
        in.text = line;
      } else {
        const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
        if (j.is_discarded() || !j.is_object()) throw Error(where + "not a JSON object");
        auto int_list = [&](const char* key) {
          std::vector<int32_t> v;
          if (!j.contains(key)) return v;
          if (!j.at(key).is_array()) throw Error(where + "\"" + key + "\" is not an array");
          for (const auto& x : j.at(key)) {
            if (!x.is_number_integer() || x.get<int64_t>() < INT32_MIN || x.get<int64_t>() > INT32_MAX)
              throw Error(where + "\"" + key + "\" holds a value that is not a 32-bit integer");
            v.push_back(x.get<int32_t>());
          }
          return v;
        };
        if (j.contains("text")) {
          if (!j.at("text").is_string()) throw Error(where + "\"text\" is not a string");
          in.text = j.at("text").get<std::string>();
        } else if (!j.contains("ids")) {
          throw Error(where + "needs \"text\" or \"ids\"");
        }
        in.ids = int_list("ids");
        in.types = int_list("token_types");
      }
      if (!in.ids.empty()) check(in, where);
      inputs.push_back(std::move(in));
    }
    if (inputs.empty()) throw Error(file + ": nothing to embed (no non-empty line)");
    return inputs;
  }

  int run_file(const Model& m, const std::vector<Input>& inputs) {
    if (tokens && ends_with(out, ".npy"))
      throw Error("--tokens with --file cannot write .npy (inputs differ in length)");
    for (const Input& in : inputs) check(in, file + ": ");
    // -o FILE.jsonl is built beside FILE and renamed into place at the end: an error part-way
    // leaves the earlier FILE whole.
    std::unique_ptr<OutputFile> fout;
    if (!out.empty() && !ends_with(out, ".npy")) fout = std::make_unique<OutputFile>(out);
    auto emit = [&](const std::string& line) {
      if (fout) return fout->write(line + "\n");
      std::cout << line << "\n";
      check_stdout();
    };
    Tensor all;  // .npy: pooled vectors [n, d]
    const size_t nb = (inputs.size() + static_cast<size_t>(batch) - 1) / static_cast<size_t>(batch);
    Progress pg("ordo embed", nb > 1 ? nb : 0);  // one batch: nothing to count
    for (size_t b = 0; b < inputs.size(); b += static_cast<size_t>(batch)) {
      if (nb > 1)
        pg.step(b / static_cast<size_t>(batch) + 1,
                "batches: inputs " + std::to_string(b + 1) + "-" +
                    std::to_string(std::min(inputs.size(), b + static_cast<size_t>(batch))) + " of " +
                    std::to_string(inputs.size()));
      std::vector<EncodeRequest> reqs;
      for (size_t i = b; i < std::min(inputs.size(), b + static_cast<size_t>(batch)); ++i)
        reqs.push_back(EncodeRequest{inputs[i].ids, inputs[i].types, {}});
      if (tokens) {
        const std::vector<Tensor> hs = m.last_hidden_states(reqs, batch);
        for (size_t k = 0; k < hs.size(); ++k) emit(to_json(m, inputs[b + k], hs[k]).dump());
        continue;
      }
      const Tensor v = m.embed_ids(reqs, options);  // [n, d]
      const int64_t d = v.dim(1);
      for (size_t k = 0; k < reqs.size(); ++k) {
        if (ends_with(out, ".npy")) {
          if (all.empty()) all = Tensor::zeros({static_cast<int64_t>(inputs.size()), d});
          std::copy(v.f32() + k * d, v.f32() + (k + 1) * d, all.f32() + (b + k) * d);
        } else {
          Tensor row = v.rows(static_cast<int64_t>(k), static_cast<int64_t>(k) + 1);
          row.shape = {d};
          emit(to_json(m, inputs[b + k], row).dump());
        }
      }
    }
    pg.finish();
    if (ends_with(out, ".npy")) {
      write_npy(out, all);
      std::cerr << "wrote " << all.shape_str() << " to " << out << "\n";
    } else if (!out.empty()) {
      fout->commit();
    }
    return 0;
  }
};

}  // namespace

std::unique_ptr<Command> make_embed() { return std::make_unique<EmbedCommand>(); }

}  // namespace ordo::cli
