// Incremental decoding: decode a window that starts at a recently emitted token, compare with the
// window's already-emitted text and return the difference. The first token of the window loses its
// leading space the same way in both decodes, so spaces come out right; text ending in U+FFFD (an
// incomplete byte-fallback / byte-level character) is held back until it completes. A long run of
// tokens that cannot start a window is decoded after one token standing for it (the anchor).
#include "internal.hpp"

namespace ordo {
namespace td = tokenizer_detail;

namespace {
const std::string kReplacement = "\xEF\xBF\xBD";
constexpr size_t kMaxBacktrack = 8;
constexpr size_t kMaxWindow = 64;
}  // namespace

// Token i's own text is non-empty and starts with neither whitespace nor U+FFFD: then the
// decoder's start-of-text rules (HF strips the first "▁", SentencePiece the first space, T5 all
// leading spaces) touch that token only. A lone "▁" would pass the stripping on to the next token.
bool StreamDecoder::stands_alone(size_t i) const {
  const std::string t = window_text(i, i + 1);
  if (t.empty() || td::starts_with(t, kReplacement)) return false;
  size_t k = 0;
  return !td::py_isspace(td::next_cp(t, k));
}

// A special token cannot be the anchor: decoders put spaces around special tokens.
bool StreamDecoder::can_anchor(size_t i) const {
  return stands_alone(i) && !tok_.decode({ids_[i]}, /*skip_special=*/true).empty();
}

// A window may start where the text starts, or at a token that stands alone: the start-of-text
// rules then treat the window's first token identically in both of emit()'s decodes.
bool StreamDecoder::good_start(size_t i) const { return i == 0 || stands_alone(i); }

StreamDecoder::StreamDecoder(const Tokenizer& tok, std::vector<int32_t> context, bool skip_special)
    : tok_(tok), ids_(std::move(context)), skip_special_(skip_special) {
  read_ids_ = ids_.size();
  // Start the window inside the context so the first new token keeps its leading space; step back
  // (a few tokens at most) past lone spaces and pieces of a multi-byte character.
  prefix_ids_ = read_ids_ > 0 ? read_ids_ - 1 : 0;
  while (prefix_ids_ > 0 && read_ids_ - prefix_ids_ < kMaxBacktrack && !good_start(prefix_ids_)) --prefix_ids_;
  prefix_text_ = window_text(prefix_ids_, read_ids_);
}

std::string StreamDecoder::window_text(size_t begin, size_t end) const {
  if (begin >= end) return {};
  return tok_.decode(std::vector<int32_t>(ids_.begin() + static_cast<std::ptrdiff_t>(begin),
                                          ids_.begin() + static_cast<std::ptrdiff_t>(end)),
                     skip_special_);
}

// The window's text up to `end`: decoded from the window start, or after the anchor, which stands
// for the run of tokens between it and the window that a long window dropped.
std::string StreamDecoder::text_to(size_t end) {
  if (anchor_ == kNoAnchor || prefix_ids_ >= end) return window_text(prefix_ids_, end);
  std::vector<int32_t> ids{ids_[anchor_]};
  ids.insert(ids.end(), ids_.begin() + static_cast<std::ptrdiff_t>(prefix_ids_),
             ids_.begin() + static_cast<std::ptrdiff_t>(end));
  const std::string text = tok_.decode(ids, skip_special_);
  if (td::starts_with(text, anchor_text_)) return text.substr(anchor_text_.size());
  // The decoder joined the anchor's text with what follows: decode the whole run again.
  prefix_ids_ = anchor_;
  anchor_ = kNoAnchor;
  prefix_text_ = window_text(prefix_ids_, read_ids_);
  return window_text(prefix_ids_, end);
}

std::string StreamDecoder::emit(size_t end, bool final) {
  std::string full = text_to(end);
  std::string out;
  if (td::starts_with(full, prefix_text_)) {
    if (full.size() == prefix_text_.size()) return {};
    if (!final && td::ends_with(full, kReplacement)) return {};  // wait for the rest of the character
    out = full.substr(prefix_text_.size());
  } else {
    // The decoder rewrote earlier text (e.g. a space put before an inline special token). What is
    // shown cannot be taken back; emit the new tokens decoded on their own.
    out = window_text(read_ids_, end);
    if (!final && td::ends_with(out, kReplacement)) return {};
  }
  // Move the window to the newest good start. A run without one (U+FFFD pieces, lone spaces,
  // skipped specials) cannot be cut, since a cut there would lose a space; once it is long, its
  // first token becomes the anchor and the window restarts at `end`, where the text shown so far
  // is complete.
  const size_t start = prefix_ids_, anchor = anchor_;
  for (size_t i = read_ids_; i < end; ++i)
    if (good_start(i)) {
      prefix_ids_ = i;
      anchor_ = kNoAnchor;
    }
  read_ids_ = end;
  if (end - prefix_ids_ > kMaxWindow && (anchor_ != kNoAnchor || can_anchor(prefix_ids_))) {
    if (anchor_ == kNoAnchor) {
      anchor_ = prefix_ids_;
      anchor_text_ = window_text(anchor_, anchor_ + 1);
    }
    prefix_ids_ = end;
  }
  prefix_text_ = prefix_ids_ == start && anchor_ == anchor ? std::move(full) : text_to(end);
  return out;
}

std::string StreamDecoder::push(int32_t id) {
  if (id < 0 || id >= tok_.vocab_size()) tok_.id_to_piece(id);  // throws Error naming the id
  ids_.push_back(id);
  return emit(ids_.size(), false);
}

std::string StreamDecoder::flush() { return emit(ids_.size(), true); }

}  // namespace ordo
