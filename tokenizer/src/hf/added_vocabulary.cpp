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
  std::vector<std::string> raw, norm;
  raw_.entry.clear();
  norm_.entry.clear();
  for (size_t i = 0; i < entries_.size(); ++i) {
    const AddedEntry& e = entries_[i];
    if (e.normalized) {
      std::string n = normalizer ? normalizer->normalize(e.content) : e.content;
      if (!n.empty()) norm.push_back(std::move(n)), norm_.entry.push_back(i);
    } else {
      raw.push_back(e.content), raw_.entry.push_back(i);
    }
  }
  raw_.matcher = LeftmostLongest(raw);
  norm_.matcher = LeftmostLongest(norm);
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
// The code point that ends just before byte `at` (s is valid UTF-8: the pipeline made it so).
size_t prev_cp_start(const std::string& s, size_t at) {
  size_t i = at - 1;
  while (i > 0 && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) --i;
  return i;
}
bool ends_with_word(const std::string& s, size_t at) {
  if (at == 0) return false;
  size_t i = prev_cp_start(s, at);
  return is_word_char(next_cp(s, i));
}
bool starts_with_word(const std::string& s, size_t at) {
  if (at >= s.size()) return false;
  return is_word_char(next_cp(s, at));
}
// Start of the whitespace run that ends at `at`, not before `floor` (a code point boundary). Only
// the run is read, so lstrip costs the whitespace it absorbs, not the text before it.
size_t whitespace_run_start(const std::string& s, size_t at, size_t floor) {
  while (at > floor) {
    size_t b = prev_cp_start(s, at), k = b;
    if (b < floor || !is_whitespace(next_cp(s, k)) || k != at) break;
    at = b;
  }
  return at;
}
}  // namespace

std::vector<AddedVocabulary::Split> AddedVocabulary::split(const std::string& s, bool normalized) const {
  const Patterns& patterns = normalized ? norm_ : raw_;
  std::vector<Split> out;
  size_t start_offset = 0;
  LeftmostLongest::Match m;
  for (size_t i = 0; i < s.size() && patterns.matcher.find(s, i, m);) {
    const AddedEntry& e = entries_[patterns.entry[m.pattern]];
    size_t start = m.begin, stop = m.end;
    i = stop;  // the next search starts after this match, kept or not
    if (e.single_word && (ends_with_word(s, start) || starts_with_word(s, stop))) continue;
    if (e.lstrip) start = whitespace_run_start(s, start, start_offset);
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
