// BPE model: characters (with continuing_subword_prefix / end_of_word_suffix) to vocabulary ids,
// unknown characters to byte-fallback tokens <0xXX> or (fused) unk, then merges by rank, lowest
// first and leftmost among equals (tokenizers' Word::merge_all). ignore_merges takes a whole word
// that is in the vocabulary as is.
#include <functional>
#include <mutex>
#include <queue>
#include <tuple>

#include "hf.hpp"

namespace ordo::tokenizer_detail::hf {

namespace {

uint64_t pair_key(int32_t a, int32_t b) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
}

class Bpe final : public VocabModel {
 public:
  explicit Bpe(BpeConfig c);
  const char* kind() const override { return "bpe"; }
  void tokenize(const std::string& s, std::vector<Token>& out) const override;
  std::optional<std::string> unk_token() const override { return cfg_.unk_token; }

 private:
  std::vector<int32_t> merge_word(const std::string& w) const;

  BpeConfig cfg_;
  std::unordered_map<uint64_t, std::pair<int32_t, int32_t>> merges_;  // (left, right) -> (rank, merged)
  std::optional<int32_t> unk_id_;
  mutable std::mutex cache_mu_;
  mutable std::unordered_map<std::string, std::vector<int32_t>> cache_;
};

Bpe::Bpe(BpeConfig c) : VocabModel(std::move(c.vocab)), cfg_(std::move(c)) {
  const size_t prefix_len = cfg_.continuing_subword_prefix ? cfg_.continuing_subword_prefix->size() : 0;
  int32_t rank = 0;
  for (const auto& [a, b] : cfg_.merges) {
    const auto ia = vocab_.find(a), ib = vocab_.find(b);
    if (ia == vocab_.end() || ib == vocab_.end())
      fail(cfg_.where + ".merges", "merge '" + a + " " + b + "' uses a token that is not in the vocabulary");
    // The right part loses its continuing-subword prefix in the merged token.
    const std::string merged = a + (b.size() >= prefix_len ? b.substr(prefix_len) : b);
    const auto im = vocab_.find(merged);
    if (im == vocab_.end())
      fail(cfg_.where + ".merges",
           "merge '" + a + " " + b + "' makes '" + merged + "', which is not in the vocabulary");
    merges_[pair_key(ia->second, ib->second)] = {rank++, im->second};  // a repeated merge keeps its last rank
  }
  if (cfg_.unk_token) {
    auto it = vocab_.find(*cfg_.unk_token);
    if (it != vocab_.end()) unk_id_ = it->second;
  }
}

std::vector<int32_t> Bpe::merge_word(const std::string& w) const {
  std::vector<int32_t> sym;
  std::optional<int32_t> pending_unk;
  for (size_t i = 0; i < w.size();) {
    const size_t b = i;
    next_cp(w, i);
    std::string s = w.substr(b, i - b);
    if (b > 0 && cfg_.continuing_subword_prefix) s = *cfg_.continuing_subword_prefix + s;
    if (i == w.size() && cfg_.end_of_word_suffix) s += *cfg_.end_of_word_suffix;
    if (auto it = vocab_.find(s); it != vocab_.end()) {
      if (pending_unk) sym.push_back(*pending_unk), pending_unk.reset();
      sym.push_back(it->second);
      continue;
    }
    if (cfg_.byte_fallback) {
      std::vector<int32_t> bytes;
      for (unsigned char c : s) {
        static const char* hex = "0123456789ABCDEF";
        const std::string code = std::string("<0x") + hex[c >> 4] + hex[c & 15] + ">";
        auto it = vocab_.find(code);
        if (it == vocab_.end()) break;
        bytes.push_back(it->second);
      }
      if (bytes.size() == s.size()) {
        // A pending unk stays pending (it lands after these bytes), as in tokenizers.
        sym.insert(sym.end(), bytes.begin(), bytes.end());
        continue;
      }
    }
    if (cfg_.unk_token) {
      if (!unk_id_) fail(cfg_.where, "unk_token '" + *cfg_.unk_token + "' is not in the vocabulary");
      if (pending_unk && !cfg_.fuse_unk) sym.push_back(*pending_unk);
      pending_unk = *unk_id_;
    }
    // No unk token: the character is dropped, as tokenizers does.
  }
  if (pending_unk) sym.push_back(*pending_unk);

  const int n = static_cast<int>(sym.size());
  std::vector<int> next(n), prev(n);
  std::vector<bool> alive(n, true);
  for (int i = 0; i < n; ++i) next[i] = i + 1 < n ? i + 1 : -1, prev[i] = i - 1;
  using Entry = std::tuple<int32_t, int, int32_t>;  // rank, position, merged id
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> pq;
  auto push = [&](int i) {
    if (i < 0 || next[i] < 0) return;
    auto it = merges_.find(pair_key(sym[i], sym[next[i]]));
    if (it != merges_.end()) pq.emplace(it->second.first, i, it->second.second);
  };
  for (int i = 0; i + 1 < n; ++i) push(i);
  while (!pq.empty()) {
    const auto [rank, i, merged] = pq.top();
    pq.pop();
    if (!alive[i] || next[i] < 0) continue;
    auto it = merges_.find(pair_key(sym[i], sym[next[i]]));
    if (it == merges_.end() || it->second.first != rank || it->second.second != merged) continue;  // stale
    const int j = next[i];
    sym[i] = merged;
    alive[j] = false;
    next[i] = next[j];
    if (next[j] >= 0) prev[next[j]] = i;
    push(prev[i]);
    push(i);
  }
  std::vector<int32_t> out;
  for (int i = 0; i >= 0 && i < n; i = next[i]) out.push_back(sym[i]);
  return out;
}

void Bpe::tokenize(const std::string& s, std::vector<Token>& out) const {
  if (s.empty()) return;
  if (cfg_.ignore_merges) {
    if (auto it = vocab_.find(s); it != vocab_.end()) {
      out.push_back({it->second, s});
      return;
    }
  }
  std::vector<int32_t> ids;
  {
    std::lock_guard<std::mutex> lock(cache_mu_);
    auto it = cache_.find(s);
    if (it != cache_.end()) ids = it->second;
  }
  if (ids.empty()) {
    ids = merge_word(s);
    if (s.size() <= 256) {  // words, not whole runs of repeated characters
      std::lock_guard<std::mutex> lock(cache_mu_);
      if (cache_.size() > 100000) cache_.clear();
      cache_.emplace(s, ids);
    }
  }
  for (int32_t id : ids) out.push_back({id, tokens_[id]});
}

}  // namespace

std::unique_ptr<Model> make_bpe_model(BpeConfig cfg) { return std::make_unique<Bpe>(std::move(cfg)); }

}  // namespace ordo::tokenizer_detail::hf
