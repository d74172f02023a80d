// Multi-pattern leftmost-longest matcher for added tokens (aho-corasick's LeftmostLongest).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ordo::tokenizer_detail {

// An Aho-Corasick automaton with the aho-corasick crate's leftmost construction: a state that
// completes a pattern (and everything below it) fails to a dead state, so once a match is in hand
// the scan only looks for a longer one starting at the same place. find() returns, among the
// matches starting at the leftmost possible position at or after `from`, the longest; equal
// patterns report the lowest index. Scanning costs O(bytes scanned), independent of the number
// of patterns; a caller that restarts at each match's end rescans at most the longest pattern's
// length past it.
class LeftmostLongest {
 public:
  LeftmostLongest() = default;
  explicit LeftmostLongest(const std::vector<std::string>& patterns);  // empty patterns never match

  bool empty() const { return states_.size() <= 1; }
  struct Match {
    size_t begin = 0, end = 0, pattern = 0;
  };
  bool find(const std::string& s, size_t from, Match& m) const;

 private:
  static constexpr uint32_t kDead = UINT32_MAX;
  struct State {
    std::vector<std::pair<unsigned char, uint32_t>> next;  // sorted by byte
    uint32_t fail = 0;
    int32_t out = -1;  // the longest pattern ending here (own or via the failure chain)
    bool own = false;  // out is this state's own pattern
  };
  uint32_t child(uint32_t state, unsigned char b) const;  // kDead when absent

  std::vector<State> states_;         // 0: the start state
  std::array<uint32_t, 256> root_{};  // dense start transitions (0: stay at the start)
  std::vector<size_t> lengths_;
};

}  // namespace ordo::tokenizer_detail
