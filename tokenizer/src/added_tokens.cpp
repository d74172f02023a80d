// Added tokens: HF PreTrainedTokenizer.tokenize's special-token splitting (leftmost-longest, then
// each token's lstrip/rstrip/single_word rules).
#include "added_tokens.hpp"

#include <optional>

#include "strings.hpp"
#include "utf8.hpp"

namespace ordo::tokenizer_detail {

void AddedTokens::add(const AddedToken& t) {
  if (t.content.empty()) return;
  auto it = by_content_.find(t.content);
  if (it != by_content_.end()) {
    by_id_.erase(tokens_[it->second].id);
    tokens_[it->second] = t;
    by_id_[t.id] = it->second;
  } else {
    by_content_[t.content] = tokens_.size();
    by_id_[t.id] = tokens_.size();
    tokens_.push_back(t);
  }
  std::lock_guard<std::mutex> lock(cache_.mu);
  cache_.matcher.reset();
}

const AddedToken* AddedTokens::find(const std::string& content) const {
  auto it = by_content_.find(content);
  return it == by_content_.end() ? nullptr : &tokens_[it->second];
}

const AddedToken* AddedTokens::by_id(int32_t id) const {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &tokens_[it->second];
}

std::vector<AddedTokens::Chunk> AddedTokens::split(const std::string& text) const {
  std::vector<std::string> parts;
  if (tokens_.empty()) {
    parts.push_back(text);
  } else {
    std::shared_ptr<const LeftmostLongest> matcher;
    {
      std::lock_guard<std::mutex> lock(cache_.mu);
      if (!cache_.matcher) {
        std::vector<std::string> contents;
        contents.reserve(tokens_.size());
        for (const auto& t : tokens_) contents.push_back(t.content);
        cache_.matcher = std::make_shared<const LeftmostLongest>(contents);
      }
      matcher = cache_.matcher;
    }
    size_t start = 0;
    LeftmostLongest::Match m;
    while (start < text.size() && matcher->find(text, start, m)) {
      if (m.begin > start) parts.push_back(text.substr(start, m.begin - start));
      parts.push_back(text.substr(m.begin, m.end - m.begin));
      start = m.end;
    }
    if (start < text.size()) parts.push_back(text.substr(start));
  }
  // PreTrainedTokenizer.tokenize: strip around added tokens, as their flags ask.
  for (size_t i = 0; i < parts.size(); ++i) {
    const AddedToken* t = find(parts[i]);
    if (!t) continue;
    const std::optional<std::string> left = i > 0 ? std::optional<std::string>(parts[i - 1]) : std::nullopt;
    const std::optional<std::string> right =
        i + 1 < parts.size() ? std::optional<std::string>(parts[i + 1]) : std::nullopt;
    if (t->rstrip && right && !right->empty()) parts[i + 1] = py_lstrip(*right);
    if (t->lstrip && left && !left->empty()) parts[i - 1] = py_rstrip(*left);
    if (t->single_word && left && !left->empty() && left->back() != ' ') {
      parts[i - 1] += parts[i];
      parts[i].clear();
    } else if (t->single_word && right && !right->empty() && right->front() != ' ') {
      parts[i] += *right;
      parts[i + 1].clear();
    }
  }
  std::vector<Chunk> out;
  for (auto& p : parts) {
    if (p.empty()) continue;
    const bool added = find(p) != nullptr;
    out.push_back({std::move(p), added});
  }
  return out;
}

}  // namespace ordo::tokenizer_detail
