// Leftmost-longest Aho-Corasick for added tokens: construction (trie, leftmost failure links) and search.
#include "leftmost_longest.hpp"

#include <algorithm>
#include <deque>

namespace ordo::tokenizer_detail {

uint32_t LeftmostLongest::child(uint32_t state, unsigned char b) const {
  const auto& next = states_[state].next;
  auto it = std::lower_bound(next.begin(), next.end(), std::make_pair(b, uint32_t{0}));
  return it != next.end() && it->first == b ? it->second : kDead;
}

LeftmostLongest::LeftmostLongest(const std::vector<std::string>& patterns) {
  states_.emplace_back();
  lengths_.reserve(patterns.size());
  for (size_t i = 0; i < patterns.size(); ++i) {
    const std::string& p = patterns[i];
    lengths_.push_back(p.size());
    if (p.empty()) continue;
    uint32_t s = 0;
    for (unsigned char b : p) {
      uint32_t t = child(s, b);
      if (t == kDead) {
        t = static_cast<uint32_t>(states_.size());
        auto& next = states_[s].next;
        next.insert(std::lower_bound(next.begin(), next.end(), std::make_pair(b, uint32_t{0})), {b, t});
        states_.emplace_back();
      }
      s = t;
    }
    if (!states_[s].own) states_[s].out = static_cast<int32_t>(i), states_[s].own = true;  // first wins
  }
  for (const auto& [b, t] : states_[0].next) root_[b] = t;

  // Breadth first, so a state's failure target is final before its children need it. A state that
  // completes a pattern gets no failure link (kDead): under leftmost semantics a match in hand is
  // only ever replaced by a longer one with the same start. A state whose failure chain runs into
  // such a state inherits kDead at that point, for the same reason.
  std::deque<uint32_t> queue;
  for (const auto& [b, t] : states_[0].next) {
    states_[t].fail = states_[t].own ? kDead : 0;
    queue.push_back(t);
  }
  while (!queue.empty()) {
    const uint32_t id = queue.front();
    queue.pop_front();
    for (const auto& [b, next] : states_[id].next) {
      queue.push_back(next);
      State& n = states_[next];
      if (n.own) {
        n.fail = kDead;
        continue;
      }
      uint32_t f = states_[id].fail, target = 0;
      for (;;) {
        if (f == kDead) {
          target = kDead;
          break;
        }
        if (f == 0) {
          target = root_[b];
          break;
        }
        const uint32_t t = child(f, b);
        if (t != kDead) {
          target = t;
          break;
        }
        f = states_[f].fail;
      }
      n.fail = target;
      if (target != kDead) n.out = states_[target].out;
    }
  }
}

bool LeftmostLongest::find(const std::string& s, size_t from, Match& m) const {
  if (empty()) return false;
  bool found = false;
  uint32_t state = 0;
  for (size_t at = from; at < s.size(); ++at) {
    const auto b = static_cast<unsigned char>(s[at]);
    for (;;) {
      if (state == 0) {
        state = root_[b];
        break;
      }
      const uint32_t t = child(state, b);
      if (t != kDead) {
        state = t;
        break;
      }
      state = states_[state].fail;
      if (state == kDead) return found;
    }
    if (const int32_t out = states_[state].out; out >= 0) {
      const size_t len = lengths_[static_cast<size_t>(out)];
      m = {at + 1 - len, at + 1, static_cast<size_t>(out)};
      found = true;
    }
  }
  return found;
}

}  // namespace ordo::tokenizer_detail
