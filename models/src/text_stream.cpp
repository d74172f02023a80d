// TextStream: generated ids to released text, cut at the first stop string.
#include "ordo/text_stream.hpp"

#include <algorithm>

namespace ordo {

TextStream::TextStream(const Tokenizer& tok, std::vector<int32_t> context, std::vector<std::string> stop_strings,
                       std::vector<int32_t> stop_ids, std::function<bool(const std::string&)> on_text,
                       bool skip_special)
    : stream_(tok, std::move(context), skip_special),
      stop_strings_(std::move(stop_strings)),
      stop_ids_(std::move(stop_ids)),
      on_text_(std::move(on_text)) {}

bool TextStream::push(int32_t id) {
  const size_t before = text.size();
  if (std::find(stop_ids_.begin(), stop_ids_.end(), id) == stop_ids_.end()) text += stream_.push(id);
  for (const std::string& s : stop_strings_) {
    // Only a match ending in the new piece can be new: search from where it could start.
    const size_t from = before >= s.size() ? before - s.size() + 1 : 0;
    const size_t at = s.empty() ? std::string::npos : text.find(s, from);
    if (at != std::string::npos) {
      text.resize(at);
      hit_stop_ = true;
      release(true);
      return false;
    }
  }
  release(false);
  return !stopped_;
}

void TextStream::finish() {
  if (stopped_) return;
  text += stream_.flush();
  for (const std::string& s : stop_strings_) {
    const size_t at = s.empty() ? std::string::npos : text.find(s);
    if (at != std::string::npos) {
      text.resize(at);
      hit_stop_ = true;
    }
  }
  release(true);
}

void TextStream::release(bool final) {
  size_t safe = text.size();
  if (!final)
    for (const std::string& s : stop_strings_)
      for (size_t k = std::min(s.size() - 1, text.size()); k > 0; --k)
        if (text.compare(text.size() - k, k, s, 0, k) == 0) {
          safe = std::min(safe, text.size() - k);
          break;
        }
  if (safe > shown_ && on_text_) {
    if (!on_text_(text.substr(shown_, safe - shown_))) stopped_ = true;
    shown_ = safe;
  }
}

}  // namespace ordo
