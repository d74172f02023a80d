// Incremental decoding: decode a window that starts at a recently emitted token, compare with the
// window's already-emitted text and return the difference. The first token of the window loses its
// leading space the same way in both decodes, so spaces come out right; text ending in U+FFFD (an
// incomplete byte-fallback / byte-level character) is held back until it completes. After a long
// run of tokens none of which can start a window, the window restarts behind an anchor: an
// ordinary token decoded in front of it, so the window's text reads as mid-text, as it is.
#include "internal.hpp"

namespace ordo {
namespace td = tokenizer_detail;

namespace {
const std::string kReplacement = "\xEF\xBF\xBD";
constexpr size_t kMaxWindow = 64;

bool starts_with_space(const std::string& t) {
  size_t k = 0;
  return td::py_isspace(td::next_cp(t, k));
}
}  // namespace

// Token i's own text is non-empty and starts with neither whitespace nor U+FFFD: then the
// decoder's start-of-text rules (HF strips the first "▁", SentencePiece the first space, T5 all
// leading spaces) touch that token only, identically in both of emit()'s decodes. A lone "▁"
// would pass the stripping on to the next token.
bool StreamDecoder::good_start(size_t i) const {
  if (i == 0) return true;
  const std::string t = window_text(i, i + 1);
  return !t.empty() && !td::starts_with(t, kReplacement) && !starts_with_space(t);
}

StreamDecoder::StreamDecoder(const Tokenizer& tok, std::vector<int32_t> context, bool skip_special)
    : tok_(tok), ids_(std::move(context)), skip_special_(skip_special) {
  // The anchor: "a" as one token that is not special and shows its text whole.
  for (int32_t id : tok_.encode("a", false)) {
    const std::string t = tok_.decode({id}, /*skip_special=*/true);
    if (!t.empty() && t == tok_.decode({id}, false) && !starts_with_space(t) && !td::starts_with(t, kReplacement) &&
        !td::ends_with(t, kReplacement)) {
      anchor_id_ = id;
      anchor_text_ = t;
      anchor_pair_text_ = tok_.decode({id, id}, skip_special_);
      break;
    }
  }
  read_ids_ = ids_.size();
  shown_ = !tok_.decode(ids_, skip_special_).empty();
  // Start the window inside the context so the first new token keeps its leading space: at its
  // last good start, or behind the anchor if the context ends in a long run without one.
  prefix_ids_ = read_ids_ > 0 ? read_ids_ - 1 : 0;
  while (prefix_ids_ > 0 && read_ids_ - prefix_ids_ <= kMaxWindow && !good_start(prefix_ids_)) --prefix_ids_;
  prefix_text_ = window_text(prefix_ids_, read_ids_);
  if (!good_start(prefix_ids_) && !td::ends_with(prefix_text_, kReplacement)) restart_behind_anchor();
}

std::string StreamDecoder::window_text(size_t begin, size_t end) const {
  if (begin >= end) return {};
  return tok_.decode(std::vector<int32_t>(ids_.begin() + static_cast<std::ptrdiff_t>(begin),
                                          ids_.begin() + static_cast<std::ptrdiff_t>(end)),
                     skip_special_);
}

// The anchor followed by ids_[begin, end).
std::vector<int32_t> StreamDecoder::behind_anchor(size_t begin, size_t end) const {
  std::vector<int32_t> ids{anchor_id_};
  ids.insert(ids.end(), ids_.begin() + static_cast<std::ptrdiff_t>(begin), ids_.begin() + static_cast<std::ptrdiff_t>(end));
  return ids;
}

// ids_[begin, end) decoded behind the anchor, without the anchor's text; nullopt if the decoder
// changed the anchor's text (joined it with what follows).
std::optional<std::string> StreamDecoder::text_behind_anchor(size_t begin, size_t end) const {
  std::string text = tok_.decode(behind_anchor(begin, end), skip_special_);
  if (!td::starts_with(text, anchor_text_)) return std::nullopt;
  return text.substr(anchor_text_.size());
}

// ids_[begin, end) show no text even between two ordinary tokens: skipped specials, not T5's
// trailing space (shown once text follows) nor part of a character.
bool StreamDecoder::adds_nothing(size_t begin, size_t end) const {
  if (anchor_id_ < 0) return false;
  std::vector<int32_t> ids = behind_anchor(begin, end);
  ids.push_back(anchor_id_);
  return tok_.decode(ids, skip_special_) == anchor_pair_text_;
}

// The window restarts at read_ids_ behind the anchor. Only once text has been shown: before that,
// the start-of-text rules still apply to what comes, and the anchor would switch them off.
void StreamDecoder::restart_behind_anchor() {
  if (anchor_id_ < 0 || !shown_) return;
  if (!anchored_) run_start_ = prefix_ids_;
  anchored_ = true;
  prefix_ids_ = read_ids_;
  prefix_text_.clear();
}

// The window's text up to `end`.
std::string StreamDecoder::window_text_to(size_t end) {
  if (anchored_ && prefix_ids_ < end) {
    if (auto text = text_behind_anchor(prefix_ids_, end)) return *text;
    // The decoder joined the anchor with the window: decode the whole run instead.
    anchored_ = false;
    prefix_ids_ = run_start_;
    prefix_text_ = window_text(prefix_ids_, read_ids_);
  }
  return window_text(prefix_ids_, end);
}

std::string StreamDecoder::emit(size_t end, bool final) {
  std::string full = window_text_to(end);
  std::string out;
  if (td::starts_with(full, prefix_text_)) {
    if (full.size() == prefix_text_.size()) {
      if (!adds_nothing(read_ids_, end)) return {};  // wait for what follows
    } else {
      if (!final && td::ends_with(full, kReplacement)) return {};  // wait for the rest of the character
      out = full.substr(prefix_text_.size());
    }
  } else {
    // The decoder rewrote earlier text (e.g. a space put before an inline special token). What is
    // shown cannot be taken back; emit the new tokens decoded on their own.
    out = window_text(read_ids_, end);
    if (!final && td::ends_with(out, kReplacement)) return {};
  }
  shown_ = shown_ || !out.empty();
  // Move the window to the newest good start. A run without one (U+FFFD pieces, lone spaces,
  // "Ġword" pieces) cannot be cut there, since the start-of-text rules would take a space from
  // the next token; once it is long, the window restarts behind the anchor at `end`, where the
  // text shown so far is complete.
  const size_t old_prefix = prefix_ids_;
  const bool was_anchored = anchored_;
  for (size_t i = read_ids_; i < end; ++i)
    if (good_start(i)) {
      prefix_ids_ = i;
      anchored_ = false;
    }
  read_ids_ = end;
  if (read_ids_ - prefix_ids_ > kMaxWindow) restart_behind_anchor();
  // Behind the anchor the window is empty: restarting set prefix_ids_ to read_ids_.
  prefix_text_ = prefix_ids_ == old_prefix && anchored_ == was_anchored ? std::move(full)
                                                                       : window_text(prefix_ids_, read_ids_);
  return out;
}

std::string StreamDecoder::push(int32_t id) {
  if (id < 0 || id >= tok_.vocab_size()) tok_.id_to_piece(id);  // throws Error naming the id
  ids_.push_back(id);
  return emit(ids_.size(), false);
}

std::string StreamDecoder::flush() { return emit(ids_.size(), true); }

}  // namespace ordo
