// Added tokens as tokenizers' AddedVocabulary: leftmost-longest matches, non-normalized tokens on
// the raw text and normalized ones on the normalized text; single_word keeps a match only between
// non-word characters, lstrip/rstrip widen it over the whitespace beside it.
#include "hf.hpp"

namespace ordo::tokenizer_detail::hf {

void AddedVocabulary::add(const AddedEntry& e) {
  if (e.content.empty()) return;
  auto it = by_content_.find(e.content);
  if (it != by_content_.end()) {
    by_id_.erase(entries_[it->second].id);
    entries_[it->second] = e;
    by_id_[e.id] = it->second;
    return;
  }
  by_content_[e.content] = entries_.size();
  by_id_[e.id] = entries_.size();
  entries_.push_back(e);
}

void AddedVocabulary::build(const Normalizer* normalizer) {
  raw_.clear();
  norm_.clear();
  for (size_t i = 0; i < entries_.size(); ++i) {
    const AddedEntry& e = entries_[i];
    if (e.normalized) {
      std::string n = normalizer ? normalizer->normalize(e.content) : e.content;
      if (!n.empty()) norm_.emplace_back(std::move(n), i);
    } else {
      raw_.emplace_back(e.content, i);
    }
  }
}

const AddedEntry* AddedVocabulary::find(const std::string& content) const {
  auto it = by_content_.find(content);
  return it == by_content_.end() ? nullptr : &entries_[it->second];
}

const AddedEntry* AddedVocabulary::by_id(int32_t id) const {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &entries_[it->second];
}

namespace {
bool ends_with_word(const std::string& s) {
  if (s.empty()) return false;
  size_t i = s.size() - 1;
  while (i > 0 && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) --i;
  return is_word_char(next_cp(s, i));
}
bool starts_with_word(const std::string& s, size_t at) {
  if (at >= s.size()) return false;
  return is_word_char(next_cp(s, at));
}
}  // namespace

std::vector<AddedVocabulary::Split> AddedVocabulary::split(const std::string& s, bool normalized) const {
  const auto& patterns = normalized ? norm_ : raw_;
  std::vector<Split> out;
  size_t start_offset = 0;
  for (size_t i = 0; i < s.size() && !patterns.empty();) {
    size_t best_len = 0, best = 0;
    for (const auto& [p, idx] : patterns)
      if (p.size() > best_len && s.compare(i, p.size(), p) == 0) best_len = p.size(), best = idx;
    if (best_len == 0) {
      ++i;
      continue;
    }
    const AddedEntry& e = entries_[best];
    size_t start = i, stop = i + best_len;
    i = stop;  // the next search starts after this match, kept or not
    if (e.single_word && (ends_with_word(s.substr(0, start)) || starts_with_word(s, stop))) continue;
    if (e.lstrip) {
      size_t run = std::string::npos;  // start of the whitespace run that ends at `start`
      for (size_t k = 0; k < start;) {
        const size_t b = k;
        if (!is_whitespace(next_cp(s, k))) run = std::string::npos;
        else if (run == std::string::npos) run = b;
      }
      if (run != std::string::npos) start = std::max(run, start_offset);
    }
    if (e.rstrip) {
      while (stop < s.size()) {
        size_t k = stop;
        if (!is_whitespace(next_cp(s, k))) break;
        stop = k;
      }
      i = stop;
    }
    if (start_offset < start) out.push_back({start_offset, start, -1});
    out.push_back({start, stop, e.id});
    start_offset = stop;
  }
  if (start_offset < s.size()) out.push_back({start_offset, s.size(), -1});
  return out;
}

}  // namespace ordo::tokenizer_detail::hf
