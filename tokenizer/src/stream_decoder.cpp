// Incremental decoding: decode a window that starts at a recently emitted token, compare with the
// window's already-emitted text and return the difference. The first token of the window loses its
// leading space the same way in both decodes, so spaces come out right; text ending in U+FFFD (an
// incomplete byte-fallback / byte-level character) is held back until it completes.
#include "internal.hpp"

namespace ordo {
namespace td = tokenizer_detail;

namespace {
const std::string kReplacement = "\xEF\xBF\xBD";
constexpr size_t kMaxBacktrack = 8;
constexpr size_t kMaxWindow = 64;
}  // namespace

// A window may start at a token whose own text is non-empty and does not start with whitespace or
// U+FFFD: then the decoder's start-of-text rules (HF strips the first "▁", SentencePiece the first
// space, T5 all leading spaces) touch that token only, identically in both decodes. A lone "▁"
// would pass the stripping on to the next token, which the full decode does not do.
bool StreamDecoder::good_start(size_t i) const {
  if (i == 0) return true;
  const std::string t = window_text(i, i + 1);
  if (t.empty() || td::starts_with(t, kReplacement)) return false;
  size_t k = 0;
  return !td::py_isspace(td::next_cp(t, k));
}

StreamDecoder::StreamDecoder(const Tokenizer& tok, std::vector<int32_t> context, bool skip_special)
    : tok_(tok), ids_(std::move(context)), skip_special_(skip_special) {
  read_ids_ = ids_.size();
  // Start the window inside the context so the first new token keeps its leading space; step back
  // (a few tokens at most) past lone spaces and pieces of a multi-byte character.
  prefix_ids_ = read_ids_ > 0 ? read_ids_ - 1 : 0;
  while (prefix_ids_ > 0 && read_ids_ - prefix_ids_ < kMaxBacktrack && !good_start(prefix_ids_)) --prefix_ids_;
}

std::string StreamDecoder::window_text(size_t begin, size_t end) const {
  if (begin >= end) return {};
  return tok_.decode(std::vector<int32_t>(ids_.begin() + static_cast<std::ptrdiff_t>(begin),
                                          ids_.begin() + static_cast<std::ptrdiff_t>(end)),
                     skip_special_);
}

std::string StreamDecoder::emit(size_t end, bool final) {
  const std::string prefix = window_text(prefix_ids_, read_ids_);
  const std::string full = window_text(prefix_ids_, end);
  std::string out;
  if (td::starts_with(full, prefix)) {
    if (full.size() == prefix.size()) return {};
    if (!final && td::ends_with(full, kReplacement)) return {};  // wait for the rest of the character
    out = full.substr(prefix.size());
  } else {
    // The decoder rewrote earlier text (e.g. a space put before an inline special token). What is
    // shown cannot be taken back; emit the new tokens decoded on their own.
    out = window_text(read_ids_, end);
    if (!final && td::ends_with(out, kReplacement)) return {};
  }
  if (good_start(read_ids_)) {
    prefix_ids_ = read_ids_;
  } else if (end - prefix_ids_ > kMaxWindow) {
    // Shorten a long window only at a good start: from a lone space, an empty or a U+FFFD token
    // the decoder's start-of-text rules would reach into the next token and drop its space.
    for (size_t i = end - 1; i > prefix_ids_; --i)
      if (good_start(i)) {
        prefix_ids_ = i;
        break;
      }
  }
  read_ids_ = end;
  return out;
}

std::string StreamDecoder::push(int32_t id) {
  if (id < 0 || id >= tok_.vocab_size()) tok_.id_to_piece(id);  // throws Error naming the id
  ids_.push_back(id);
  return emit(ids_.size(), false);
}

std::string StreamDecoder::flush() { return emit(ids_.size(), true); }

}  // namespace ordo
