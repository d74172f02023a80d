// Added tokens: HF PreTrainedTokenizer.tokenize's special-token splitting (leftmost-longest, then
// each token's lstrip/rstrip/single_word rules).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "leftmost_longest.hpp"

namespace ordo::tokenizer_detail {

struct AddedToken {
  std::string content;
  int32_t id = -1;
  bool special = true;
  bool lstrip = false, rstrip = false, single_word = false;
};

class AddedTokens {
 public:
  void add(const AddedToken& t);  // replaces an entry with the same content
  const AddedToken* find(const std::string& content) const;
  const AddedToken* by_id(int32_t id) const;
  bool empty() const { return tokens_.empty(); }
  const std::vector<AddedToken>& all() const { return tokens_; }

  struct Chunk {
    std::string text;
    bool added = false;  // text is the content of an added token
  };
  // Splits text on added-token contents (leftmost-longest, like HF's Trie.split), then applies the
  // tokens' lstrip/rstrip/single_word rules and drops empty chunks, as PreTrainedTokenizer.tokenize.
  std::vector<Chunk> split(const std::string& text) const;

 private:
  std::vector<AddedToken> tokens_;
  std::unordered_map<std::string, size_t> by_content_;
  std::unordered_map<int32_t, size_t> by_id_;
  // Built on first split() after an add(); shared_ptr so a split in progress keeps its own.
  struct Cache {
    std::mutex mu;
    std::shared_ptr<const LeftmostLongest> matcher;
    Cache() = default;
    Cache(const Cache&) {}  // a copy rebuilds its own
    Cache& operator=(const Cache&) {
      std::lock_guard<std::mutex> lock(mu);
      matcher.reset();
      return *this;
    }
  };
  mutable Cache cache_;
};

}  // namespace ordo::tokenizer_detail
