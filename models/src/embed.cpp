// Model's embedding calls: each input's last hidden state, pooled to one vector and normalized.
#include <algorithm>
#include <cmath>

#include "ordo/finite.hpp"
#include "ordo/input.hpp"
#include "ordo/ordo.hpp"
#include "sentence_transformers.hpp"

namespace ordo {
namespace {

// Rows of h [T, d] that are real tokens (mask 1; every row when the mask is empty).
std::vector<int64_t> real_rows(const EncodeRequest& in, int64_t T) {
  std::vector<int64_t> r;
  for (int64_t t = 0; t < T; ++t)
    if (in.mask.empty() || in.mask[static_cast<size_t>(t)]) r.push_back(t);
  return r;
}

void check_input(const EncodeRequest& in, size_t i, bool decoder, const std::string& arch, const std::string& dir) {
  const std::string where = dir + ": embed: input " + std::to_string(i) + ": ";
  if (in.ids.empty()) throw Error(where + "no tokens");
  if (!in.token_types.empty() && in.token_types.size() != in.ids.size())
    throw Error(where + "token types have " + std::to_string(in.token_types.size()) + " entries for " +
                std::to_string(in.ids.size()) + " tokens");
  if (decoder && !in.token_types.empty())
    throw Error(where + "token types are for encoders, and " + arch + " is a decoder-only model");
  if (!in.mask.empty() && in.mask.size() != in.ids.size())
    throw Error(where + "attention mask has " + std::to_string(in.mask.size()) + " entries for " +
                std::to_string(in.ids.size()) + " tokens");
  if (!in.mask.empty() && std::find(in.mask.begin(), in.mask.end(), uint8_t{1}) == in.mask.end())
    throw Error(where + "every token is padding (attention mask all 0)");
}

// One input's vector [d] from its last hidden state h [T, d].
void pool_into(const Transformer& e, const Tensor& h, const EncodeRequest& in, Pooling pooling, float* out) {
  const int64_t T = h.dim(0), d = h.dim(1);
  const std::vector<int64_t> real = real_rows(in, T);
  const float* x = h.f32();
  switch (pooling) {
    case Pooling::Mean: {
      // Summed in double: the mean of many rows stays as exact as float32 allows.
      std::vector<double> sum(static_cast<size_t>(d), 0.0);
      for (int64_t t : real)
        for (int64_t i = 0; i < d; ++i) sum[static_cast<size_t>(i)] += x[t * d + i];
      for (int64_t i = 0; i < d; ++i)
        out[i] = static_cast<float>(sum[static_cast<size_t>(i)] / static_cast<double>(real.size()));
      return;
    }
    case Pooling::Cls:  // the first real token: row 0 unless the input is left-padded
      std::copy(x + real.front() * d, x + (real.front() + 1) * d, out);
      return;
    case Pooling::Last: std::copy(x + real.back() * d, x + (real.back() + 1) * d, out); return;
    case Pooling::Pooler: {
      const Tensor p = e.pool(h.rows(real.front(), real.front() + 1));
      std::copy(p.f32(), p.f32() + d, out);
      return;
    }
  }
}

void normalize_l2(float* v, int64_t d) {
  double s = 0;
  for (int64_t i = 0; i < d; ++i) s += static_cast<double>(v[i]) * v[i];
  // As torch.nn.functional.normalize: divided by max(|v|, 1e-12).
  const double n = std::max(std::sqrt(s), 1e-12);
  for (int64_t i = 0; i < d; ++i) v[i] = static_cast<float>(v[i] / n);
}

}  // namespace

const char* pooling_name(Pooling p) {
  switch (p) {
    case Pooling::Mean: return "mean";
    case Pooling::Cls: return "cls";
    case Pooling::Last: return "last";
    case Pooling::Pooler: return "pooler";
  }
  return "?";
}

namespace {

// opts with its unset fields filled in from the directory (see EmbedOptions).
EmbedOptions resolve(const Model& m, const EmbedOptions& opts) {
  if (opts.pooling && opts.normalize) return opts;
  const std::optional<SentenceTransformersSetup> st = read_sentence_transformers(m.dir());
  EmbedOptions r = opts;
  if (!r.normalize) r.normalize = st && st->normalize;
  if (!r.pooling) {
    if (st && !st->problem.empty()) throw Error(st->problem + ": choose a pooling (--pooling)");
    r.pooling = st ? st->pooling : m.spec().graph == GraphKind::Decoder ? Pooling::Last : Pooling::Mean;
  }
  return r;
}

}  // namespace

EmbedOptions Model::embed_options(const EmbedOptions& opts) const {
  return with_ordo_errors(dir() + ": embed", [&] { return resolve(*this, opts); });
}

std::vector<Tensor> Model::last_hidden_states(const std::vector<EncodeRequest>& inputs, int batch) const {
  return with_ordo_errors(dir() + ": last_hidden_states", [&] {
    const Transformer& e = engine();
    const bool decoder = spec().graph == GraphKind::Decoder;
    if (batch < 1) throw Error(dir() + ": embed: batch size must be >= 1, got " + std::to_string(batch));
    for (size_t i = 0; i < inputs.size(); ++i) check_input(inputs[i], i, decoder, spec().architecture, dir());
    std::vector<Tensor> out;
    out.reserve(inputs.size());
    for (size_t b = 0; b < inputs.size(); b += static_cast<size_t>(batch)) {
      const size_t end = std::min(inputs.size(), b + static_cast<size_t>(batch));
      if (!decoder) {
        const std::vector<EncodeRequest> chunk(inputs.begin() + static_cast<std::ptrdiff_t>(b),
                                               inputs.begin() + static_cast<std::ptrdiff_t>(end));
        for (Tensor& h : e.encode_batch(chunk)) out.push_back(std::move(h));
        continue;
      }
      // Decoder-only: each input a fresh sequence, all of them in one forward, no logits.
      std::vector<Sequence> seqs;
      seqs.reserve(end - b);
      for (size_t i = b; i < end; ++i) seqs.push_back(e.new_sequence(static_cast<int64_t>(inputs[i].ids.size())));
      std::vector<DecodeRequest> reqs;
      for (size_t i = b; i < end; ++i)
        reqs.push_back(DecodeRequest{&seqs[i - b], inputs[i].ids, inputs[i].mask, LogitsFor::None});
      for (ForwardOutput& o : e.decode_batch(reqs, PromptRows::Shared)) out.push_back(std::move(o.final_hidden));
    }
    return out;
  });
}

Tensor Model::embed_ids(const std::vector<EncodeRequest>& inputs, const EmbedOptions& opts) const {
  const EmbedOptions o = with_ordo_errors(dir() + ": embed", [&] {
    EmbedOptions r = resolve(*this, opts);
    if (*r.pooling == Pooling::Pooler && !spec().pooler.present())
      throw Error(dir() + ": " + spec().architecture + " has no pooler: it embeds with mean, cls or last pooling");
    return r;
  });
  const std::vector<Tensor> hs = last_hidden_states(inputs, opts.batch);
  return with_ordo_errors(dir() + ": embed", [&] {
    const int64_t d = spec().d_model;
    Tensor out = Tensor::zeros({static_cast<int64_t>(inputs.size()), d});
    for (size_t i = 0; i < inputs.size(); ++i) {
      float* row = out.f32() + static_cast<int64_t>(i) * d;
      pool_into(engine(), hs[i], inputs[i], *o.pooling, row);
      // A NaN embedding would be written out, and compare as unrelated to everything: an error.
      if (const int64_t bad = first_nonfinite(row, d); bad >= 0)
        throw Error("the embedding of input " + std::to_string(i) + " is not finite (" + value_str(row[bad]) +
                    " at dimension " + std::to_string(bad) +
                    "): the model's weights or activations are not finite (check with ordo inspect)");
      if (*o.normalize) normalize_l2(row, d);
    }
    return out;
  });
}

Tensor Model::embed(const std::vector<std::string>& texts, const EmbedOptions& opts) const {
  std::vector<EncodeRequest> inputs(texts.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    inputs[i].ids = encode(texts[i], opts.add_special);
    if (inputs[i].ids.empty())
      throw Error(dir() + ": embed: text " + std::to_string(i) + " has no tokens" +
                  (texts[i].empty() ? " (it is empty)" : ""));
  }
  return embed_ids(inputs, opts);
}

}  // namespace ordo
