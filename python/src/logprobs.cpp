// Log-probabilities from logits rows, through ordo::token_nll (the scoring of `ordo ppl`).
#include "logprobs.hpp"

#include <algorithm>
#include <numeric>

#include "ordo/perplexity.hpp"

namespace ordo::py {

TokenLogprobs step_logprobs(const std::vector<Tensor>& step_logits, const std::vector<int32_t>& ids, int k) {
  TokenLogprobs out;
  const size_t n = std::min(step_logits.size(), ids.size());
  std::vector<int32_t> order;
  for (size_t i = 0; i < n; ++i) {
    const Tensor& row = step_logits[i];
    const int64_t V = row.numel();
    const float* x = row.f32();
    const double nll = token_nll(x, V, ids[i]);
    out.chosen.push_back(-nll);
    if (k <= 0) continue;
    // log p(j) = x_j − logsumexp(x), and logsumexp(x) = x_id + nll(id).
    const double lse = static_cast<double>(x[ids[i]]) + nll;
    const int64_t kk = std::min<int64_t>(k, V);
    order.resize(static_cast<size_t>(V));
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + kk, order.end(),
                      [x](int32_t a, int32_t b) { return x[a] > x[b] || (x[a] == x[b] && a < b); });
    std::vector<std::pair<int32_t, double>> top;
    for (int64_t j = 0; j < kk; ++j) top.emplace_back(order[j], static_cast<double>(x[order[j]]) - lse);
    out.top.push_back(std::move(top));
  }
  return out;
}

std::vector<double> causal_logprobs(const Tensor& logits, const std::vector<int32_t>& ids) {
  std::vector<double> out;
  if (logits.empty() || ids.size() < 2) return out;
  const int64_t V = logits.dim(1);
  for (size_t t = 1; t < ids.size(); ++t) out.push_back(-token_nll(logits.f32() + (t - 1) * V, V, ids[t]));
  return out;
}

}  // namespace ordo::py
