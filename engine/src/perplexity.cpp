// Perplexity over sliding windows of a token sequence.
#include "ordo/perplexity.hpp"
#include "ordo/finite.hpp"

#include <algorithm>
#include <cmath>

namespace ordo {

double PerplexityResult::ppl() const { return tokens ? std::exp(nll_sum / static_cast<double>(tokens)) : NAN; }

double token_nll(const float* logits, int64_t vocab, int32_t target) {
  const float mx = *std::max_element(logits, logits + vocab);
  double sum = 0;
  for (int64_t i = 0; i < vocab; ++i) sum += std::exp(static_cast<double>(logits[i]) - mx);
  return std::log(sum) + mx - logits[target];
}

namespace {

struct Window {
  int64_t begin, end, first_scored;  // score targets at indices [first_scored, end)
};

std::vector<Window> plan_windows(int64_t n, int64_t ctx, int64_t stride) {
  std::vector<Window> w;
  if (stride == 0) {
    for (int64_t b = 0; b + ctx <= n; b += ctx) w.push_back({b, b + ctx, b + 1});
    return w;
  }
  int64_t scored_until = 1;  // token 0 is never scored
  for (int64_t b = 0; scored_until < n; b += stride) {
    const int64_t e = std::min(b + ctx, n);
    if (e > scored_until) w.push_back({b, e, std::max(scored_until, b + 1)});
    scored_until = std::max(scored_until, e);
    if (e == n) break;
  }
  return w;
}

}  // namespace

int64_t perplexity_windows(int64_t n, int64_t ctx, int64_t stride) {
  return n < ctx || ctx < 2 || stride < 0 || stride > ctx ? 0
                                                          : static_cast<int64_t>(plan_windows(n, ctx, stride).size());
}

PerplexityResult perplexity(const Transformer& model, const std::vector<int32_t>& ids, int64_t ctx, int64_t stride,
                            const std::function<void(int64_t, int64_t)>& progress, int64_t batch) {
  return perplexity(model, ids, ctx, stride, progress, batch, PerplexityPart{});
}

PerplexityResult perplexity(const Transformer& model, const std::vector<int32_t>& ids, int64_t ctx, int64_t stride,
                            const std::function<void(int64_t, int64_t)>& progress, int64_t batch,
                            const PerplexityPart& part) {
  if (batch < 1) throw Error("perplexity: batch must be at least 1, got " + std::to_string(batch));
  const int64_t n = static_cast<int64_t>(ids.size());
  if (ctx < 2) throw Error("perplexity: context length must be at least 2, got " + std::to_string(ctx));
  if (stride < 0 || stride > ctx)
    throw Error("perplexity: stride must be in [1, ctx] (or 0 for non-overlapping windows), got " +
                std::to_string(stride));
  if (n < ctx)
    throw Error("perplexity: the text has " + std::to_string(n) + " tokens, fewer than the context length " +
                std::to_string(ctx) + "; give a longer text or a shorter --ctx");
  std::vector<Window> windows = plan_windows(n, ctx, stride);
  const int64_t W = static_cast<int64_t>(windows.size());
  const int64_t last = part.last < 0 ? W : part.last;
  if (part.first < 0 || part.first > last || last > W)
    throw Error("perplexity: windows [" + std::to_string(part.first) + ", " + std::to_string(last) + ") of " +
                std::to_string(W));
  windows = std::vector<Window>(windows.begin() + part.first, windows.begin() + last);
  const int64_t V = model.spec().vocab_size, d = model.spec().d_model;
  const int64_t chunk = std::max<int64_t>(1, std::min<int64_t>(256, (int64_t{1} << 24) / V));

  PerplexityResult r;
  r.ctx = ctx;
  for (size_t w0 = 0; w0 < windows.size(); w0 += static_cast<size_t>(batch)) {
    const size_t n = std::min(windows.size() - w0, static_cast<size_t>(batch));
    std::vector<Sequence> seqs;
    std::vector<DecodeRequest> reqs;
    seqs.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      const Window& w = windows[w0 + i];
      seqs.push_back(model.new_sequence(w.end - w.begin));
      reqs.push_back(DecodeRequest{
          &seqs.back(), std::vector<int32_t>(ids.begin() + w.begin, ids.begin() + w.end), {}, LogitsFor::None});
    }
    const std::vector<ForwardOutput> outs =
        n == 1 ? std::vector<ForwardOutput>{model.decode(seqs[0], reqs[0].ids, {}, LogitsFor::None)}
               : model.decode_batch(reqs, PromptRows::Shared);
    for (size_t i = 0; i < n; ++i) {
      const Window& w = windows[w0 + i];
      // Row t of the window predicts token begin + t + 1.
      for (int64_t t0 = w.first_scored - 1 - w.begin; t0 < w.end - w.begin - 1; t0 += chunk) {
        const int64_t rows = std::min(chunk, w.end - w.begin - 1 - t0);
        Tensor lg = model.logits(outs[i].final_hidden.f32() + t0 * d, rows);
        for (int64_t k = 0; k < rows; ++k) {
          // A NaN or Inf would make the perplexity NaN (or 0): an error naming the token instead.
          check_finite_row(lg.f32() + k * V, V, w.begin + t0 + k);
          const double nll = token_nll(lg.f32() + k * V, V, ids[w.begin + t0 + k + 1]);
          r.nll_sum += nll;
          if (part.nlls) part.nlls->push_back(nll);
        }
        r.tokens += rows;
      }
      ++r.windows;
    }
    if (progress) progress(r.windows, static_cast<int64_t>(windows.size()));
  }
  return r;
}

}  // namespace ordo
