// The batched decoder step: requests checked, rows placed in caches, the stack run, logits, advance.
#include <algorithm>
#include <cstring>
#include <string>

#include "batch.hpp"
#include "kernels/team.hpp"
#include "kv_cache_internal.hpp"
#include "ordo/transformer.hpp"
#include "scratch.hpp"
#include "step_timer.hpp"

namespace ordo {

using detail::Batch;
using detail::Segment;

void Transformer::check_step(const std::vector<StepInput>& in, Batch& b) const {
  b.segs.resize(in.size());
  b.rows = b.single_rows = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    const StepInput& r = in[i];
    if (!r.seq) throw Error("decode: request " + std::to_string(i) + " has no sequence");
    if (r.seq->owner() != serial_)  // the message is only built on failure: this runs every step
      check_owner(*r.seq, in.size() > 1 ? "decode_batch: request " + std::to_string(i) : std::string("decode"));
    if (r.T <= 0) throw Error("decode: no tokens");
    if (spec_.graph == GraphKind::EncoderDecoder && r.seq->cross.k.empty())
      throw Error("encoder-decoder decode needs the encoder output: call attach_encoder first");
    for (size_t j = 0; j < i; ++j)
      if (in[j].seq == r.seq)
        throw Error("decode_batch: one sequence appears in requests " + std::to_string(j) + " and " +
                    std::to_string(i));
    b.rows += r.T;
    b.single_rows += r.T == 1;
  }
}

std::vector<int64_t> Transformer::place_step(const std::vector<StepInput>& in, const detail::KeyMap& keys, Batch& b,
                                             std::vector<int32_t>& ids, std::vector<int32_t>& pos) const {
  ids.resize(static_cast<size_t>(b.rows));
  pos.resize(static_cast<size_t>(b.rows));
  std::vector<int64_t> next(in.size());
  // One-token requests take the first rows, in request order, then the prompts.
  int64_t single_row = 0, prompt_row = b.single_rows;
  for (size_t i = 0; i < in.size(); ++i) {
    const StepInput& r = in[i];
    Sequence& seq = *r.seq;
    KVCache& cache = seq.self;
    keys.before_step(seq, r.mask, r.T);
    const int64_t base = cache.length;
    const int64_t row0 = r.T == 1 ? single_row++ : prompt_row;
    if (r.T > 1) prompt_row += r.T;
    int64_t nx = seq.next_position;
    for (int64_t t = 0; t < r.T; ++t) {
      const bool real = !r.mask || r.mask[t];
      pos[static_cast<size_t>(row0 + t)] = real ? static_cast<int32_t>(nx++) : 0;
    }
    if (nx > seq.next_position) dec_scheme_->check_positions(keys.scheme_position(nx - 1));
    std::copy(r.ids, r.ids + r.T, ids.begin() + row0);
    detail::reserve_kv_cache(cache, base + r.T);
    cache.positions.resize(static_cast<size_t>(base + r.T));
    cache.valid.resize(static_cast<size_t>(base + r.T));
    for (int64_t t = 0; t < r.T; ++t) {
      cache.positions[static_cast<size_t>(base + t)] = pos[static_cast<size_t>(row0 + t)];
      cache.valid[static_cast<size_t>(base + t)] = r.mask ? r.mask[t] : 1;
    }
    next[i] = nx;
    b.segs[i] = Segment{row0,
                        r.T,
                        pos.data() + row0,
                        &cache,
                        spec_.graph == GraphKind::EncoderDecoder ? &seq.cross : nullptr,
                        std::max<int64_t>(nx, 1),
                        keys.active() ? &keys : nullptr};
  }
  return next;
}

// Logits: one row per sequence (Last, or a one-token All) gathered into one block (the head read
// once for all of them); a prompt's rows (All) alone, or shared. Every row gets the bits it gets
// alone (the panel kernels are batch-invariant).
void Transformer::step_outputs(const std::vector<StepInput>& in, const Batch& b, const float* x,
                               std::vector<ForwardOutput>& out) const {
  const int64_t d = spec_.d_model;
  const bool prompts_alone = b.prompts_alone;
  auto one_row = [&](size_t i) {
    return in[i].which == LogitsFor::Last || (in[i].which == LogitsFor::All && in[i].T == 1);
  };
  int64_t n_single = 0, n_shared = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    if (one_row(i))
      ++n_single;
    else if (in[i].which == LogitsFor::All && !prompts_alone)
      n_shared += in[i].T;
  }
  float* rows = detail::scratch(detail::kScrH, (n_single + n_shared) * d);
  int64_t g = 0, h = n_single;
  for (size_t i = 0; i < in.size(); ++i) {
    const Segment& s = b.segs[i];
    const float* xs = x + s.row0 * d;
    if (one_row(i)) {
      std::memcpy(rows + g++ * d, xs + (s.T - 1) * d, static_cast<size_t>(d) * sizeof(float));
    } else if (in[i].which == LogitsFor::None) {
      out[i].final_hidden = Tensor::zeros({s.T, d});
      std::memcpy(out[i].final_hidden.f32(), xs, static_cast<size_t>(s.T * d) * sizeof(float));
    } else if (prompts_alone) {
      out[i].logits = logits(xs, s.T);
    } else {
      std::memcpy(rows + h * d, xs, static_cast<size_t>(s.T * d) * sizeof(float));
      h += s.T;
    }
  }
  // Each sequence's logits are its rows of one block (views, not copies).
  const Tensor single = n_single ? logits(rows, n_single) : Tensor{};
  const Tensor shared = n_shared ? logits(rows + n_single * d, n_shared) : Tensor{};
  g = 0;
  h = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    if (one_row(i)) {
      out[i].logits = single.rows(g, g + 1);
      ++g;
    } else if (in[i].which == LogitsFor::All && !prompts_alone) {
      out[i].logits = shared.rows(h, h + in[i].T);
      h += in[i].T;
    }
  }
}

void Transformer::advance(const std::vector<StepInput>& in, const std::vector<int64_t>& next) {
  for (size_t i = 0; i < in.size(); ++i) {
    const StepInput& r = in[i];
    Sequence& seq = *r.seq;
    seq.self.length += r.T;
    seq.next_position = next[i];
    seq.tokens.insert(seq.tokens.end(), r.ids, r.ids + r.T);
    for (int64_t t = 0; t < r.T; ++t) seq.token_valid.push_back(r.mask ? r.mask[t] : 1);
  }
}

std::vector<ForwardOutput> Transformer::step(const std::vector<StepInput>& in, std::vector<Tensor>* hidden,
                                             bool prompts_alone) const {
  if (spec_.graph == GraphKind::Encoder)
    throw Error(spec_.architecture + " is an encoder-only model: it cannot decode");
  detail::StepTimer timing;  // when a recording is alive on this thread (StepTimes)
  // Reused across steps: once warm, a decode step allocates little beyond its outputs.
  thread_local Batch b;
  thread_local std::vector<int32_t> ids, pos;
  const detail::KeyMap keys(spec_.position, dec_scheme_.get());
  check_step(in, b);
  b.prompts_alone = prompts_alone;
  const std::vector<int64_t> next = place_step(in, keys, b, ids, pos);
  const int32_t* epos = keys.embed_positions(pos);
  std::vector<ForwardOutput> out(in.size());
  auto forward = [&] {
    float* x = detail::scratch(detail::kScrX, b.rows * spec_.d_model);
    embed(ids.data(), nullptr, b.rows, epos, *dec_scheme_, x);
    run_stack(spec_.decoder, *dec_scheme_, x, b, hidden);
    step_outputs(in, b, x, out);
  };
  // Every parallel loop of a step is a parallel_items() (the panel kernels, norms, activations,
  // attention's heads, whose GEMMs run one per item), so the threads stay in one region for the
  // whole step instead of waking for each of its loops: ~60 for a decode step, ~200 for a prompt
  // of a 12-layer model, each a wake-up from sleep under the CLI's passive wait policy (6% of a
  // 512-token Q4_0 prefill).
  detail::run_as_team(forward);
  advance(in, next);
  timing.finish();
  return out;
}

ForwardOutput Transformer::decode(Sequence& seq, const std::vector<int32_t>& ids, const std::vector<uint8_t>& mask,
                                  LogitsFor which, bool want_hidden) const {
  const int64_t T = static_cast<int64_t>(ids.size());
  if (!mask.empty() && static_cast<int64_t>(mask.size()) != T)
    throw Error("attention mask has " + std::to_string(mask.size()) + " entries for " + std::to_string(T) + " tokens");
  ForwardOutput out;
  ForwardOutput r = std::move(step({StepInput{&seq, ids.data(), T, mask.empty() ? nullptr : mask.data(), which}},
                                   want_hidden ? &out.hidden : nullptr, true)[0]);
  out.logits = std::move(r.logits);
  out.final_hidden = std::move(r.final_hidden);
  return out;
}

std::vector<ForwardOutput> Transformer::decode_batch(const std::vector<DecodeRequest>& requests,
                                                     PromptRows prompts) const {
  std::vector<StepInput> in;
  in.reserve(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    const DecodeRequest& r = requests[i];
    const int64_t T = static_cast<int64_t>(r.ids.size());
    if (!r.mask.empty() && static_cast<int64_t>(r.mask.size()) != T)
      throw Error("decode_batch: request " + std::to_string(i) + ": attention mask has " +
                  std::to_string(r.mask.size()) + " entries for " + std::to_string(T) + " tokens");
    in.push_back(StepInput{r.seq, r.ids.data(), T, r.mask.empty() ? nullptr : r.mask.data(), r.which});
  }
  return step(in, nullptr, prompts == PromptRows::Alone);
}

}  // namespace ordo
