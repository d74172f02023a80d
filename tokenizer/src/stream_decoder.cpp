// Incremental decoding: decode a window that starts at a recently emitted token, compare with the
// window's already-emitted text and return the difference. The first token of the window loses its
// leading space the same way in both decodes, so spaces come out right; text ending in U+FFFD (an
// incomplete byte-fallback / byte-level character) is held back until it completes. After a long
// run of tokens none of which can start a window, the window restarts at the run's last id behind
// an anchor: an ordinary token decoded in front, so the window's text reads as mid-text, as it is.
#include "ordo/tensor.hpp"
#include "ordo/tokenizer.hpp"
#include "strings.hpp"
#include "utf8.hpp"

namespace ordo {
namespace td = tokenizer_detail;

namespace {
const std::string kReplacement = "\xEF\xBF\xBD";
constexpr size_t kMaxWindow = 64;

bool starts_with_space(const std::string& t) {
  size_t k = 0;
  return td::py_isspace(td::next_cp(t, k));
}

bool all_space(const std::string& t) {
  for (size_t k = 0; k < t.size();)
    if (!td::py_isspace(td::next_cp(t, k))) return false;
  return true;
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

// decode() drops a skipped special before anything else, so the stream can forget it. A token
// without text either way (SentencePiece's control tokens) is not known to be dropped and stays.
bool StreamDecoder::skipped(int32_t id) const {
  return skip_special_ && tok_.decode({id}, true).empty() && !tok_.decode({id}, false).empty();
}

StreamDecoder::StreamDecoder(const Tokenizer& tok, std::vector<int32_t> context, bool skip_special)
    : tok_(tok), skip_special_(skip_special) {
  for (int32_t id : context)
    if (!skipped(id)) ids_.push_back(id);
  // The anchor: the first fit id of encode("a"). Its text as the first token must hold a visible
  // character (that ends the start-of-text rules), be whole characters, not be a special token's,
  // and stay as it is when another token follows (so it can be cut off the window's text).
  for (int32_t id : tok_.encode("a", false)) {
    const std::string t = tok_.decode({id}, false), pair = tok_.decode({id, id}, false);
    if (!t.empty() && !all_space(t) && !td::starts_with(t, kReplacement) && !td::ends_with(t, kReplacement) &&
        t == tok_.decode({id}, true) && td::starts_with(pair, t)) {
      anchor_id_ = id;
      anchor_text_ = t;
      anchor_join_ = pair.substr(t.size());
      break;
    }
  }
  read_ids_ = ids_.size();
  // Start the window inside the context so the first new token keeps its leading space: at its
  // last good start, or behind the anchor if the context ends in a long run without one and the
  // anchor can stand for it, else at the good start before the run.
  prefix_ids_ = read_ids_ > 0 ? read_ids_ - 1 : 0;
  while (prefix_ids_ > 0 && read_ids_ - prefix_ids_ <= kMaxWindow && !good_start(prefix_ids_)) --prefix_ids_;
  prefix_text_ = window_text(prefix_ids_, read_ids_);
  if (good_start(prefix_ids_) || restart_behind_anchor()) return;
  while (prefix_ids_ > 0 && !good_start(prefix_ids_)) --prefix_ids_;
  prefix_text_ = window_text(prefix_ids_, read_ids_);
}

std::string StreamDecoder::window_text(size_t begin, size_t end) const {
  if (begin >= end) return {};
  return tok_.decode(std::vector<int32_t>(ids_.begin() + static_cast<std::ptrdiff_t>(begin),
                                          ids_.begin() + static_cast<std::ptrdiff_t>(end)),
                     skip_special_);
}

// The window's ids up to `end` with `after` appended, decoded; behind the anchor if anchored_.
// nullopt if the decoder changed the anchor's text (joined it with what follows).
std::optional<std::string> StreamDecoder::decode_window(size_t end, const std::vector<int32_t>& after) const {
  std::vector<int32_t> ids;
  if (anchored_) ids.push_back(anchor_id_);
  ids.insert(ids.end(), ids_.begin() + static_cast<std::ptrdiff_t>(prefix_ids_),
             ids_.begin() + static_cast<std::ptrdiff_t>(end));
  ids.insert(ids.end(), after.begin(), after.end());
  std::string text = tok_.decode(ids, skip_special_);
  if (!anchored_) return text;
  if (!td::starts_with(text, anchor_text_)) return std::nullopt;
  return text.substr(anchor_text_.size());
}

// Restarts the window behind the anchor, keeping its last id (for decoders that rewrite text
// across a boundary). Refused unless the text before that id joins an anchor the way the anchor
// joins itself: a decoder that holds back trailing spaces (T5), puts the space on the token
// before (a "</w>" suffix), has not left the start of the text, or waits for the rest of a
// character, would not.
bool StreamDecoder::restart_behind_anchor() {
  if (anchor_id_ < 0 || read_ids_ == 0) return false;
  const size_t keep = read_ids_ - 1;
  const auto before = decode_window(keep, {});
  const auto joined = decode_window(keep, {anchor_id_});
  if (!before || td::ends_with(*before, kReplacement) || !joined || *joined != *before + anchor_join_) return false;
  const size_t start = prefix_ids_;
  const bool was_anchored = anchored_;
  anchored_ = true;
  prefix_ids_ = keep;
  const auto text = decode_window(read_ids_, {});
  if (!text) {
    anchored_ = was_anchored;
    prefix_ids_ = start;
    return false;
  }
  if (!was_anchored) run_start_ = start;
  prefix_text_ = *text;
  return true;
}

// ids_[i] shows no text even between two ordinary tokens (SentencePiece's control tokens).
bool StreamDecoder::shows_nothing(size_t i) const {
  return anchor_id_ >= 0 &&
         tok_.decode({anchor_id_, ids_[i], anchor_id_}, skip_special_) == anchor_text_ + anchor_join_;
}

// The window's text up to `end`. If the decoder changed the anchor's text, the window goes back to
// where it started before it was first anchored.
std::string StreamDecoder::window_text_to(size_t end) {
  if (auto text = decode_window(end, {})) return *text;
  anchored_ = false;
  prefix_ids_ = run_start_;
  prefix_text_ = window_text(prefix_ids_, read_ids_);
  return window_text(prefix_ids_, end);
}

std::string StreamDecoder::emit(size_t end, bool final) {
  std::string full = window_text_to(end);
  std::string out;
  if (td::starts_with(full, prefix_text_)) {
    // No text yet: wait for what follows, unless the one new id never shows any; then the window
    // may move on past it.
    if (full.size() == prefix_text_.size() && (read_ids_ + 1 != end || !shows_nothing(read_ids_))) return {};
    if (!final && td::ends_with(full, kReplacement)) return {};  // wait for the rest of the character
    out = full.substr(prefix_text_.size());
  } else {
    // The decoder rewrote earlier text (e.g. a space put before an inline special token). What is
    // shown cannot be taken back; emit the new tokens decoded on their own.
    out = window_text(read_ids_, end);
    if (!final && td::ends_with(out, kReplacement)) return {};
  }
  // Move the window to the newest good start. A run without one (U+FFFD pieces, lone spaces,
  // "Ġword" pieces) cannot be cut, since the start-of-text rules would take a space from the next
  // token; once it is long, the window restarts behind the anchor.
  bool moved = false;
  for (size_t i = read_ids_; i < end; ++i)
    if (good_start(i)) {
      prefix_ids_ = i;
      anchored_ = false;
      moved = true;
    }
  read_ids_ = end;
  prefix_text_ = moved ? window_text(prefix_ids_, read_ids_) : std::move(full);
  if (read_ids_ - prefix_ids_ > kMaxWindow) restart_behind_anchor();
  return out;
}

std::string StreamDecoder::push(int32_t id) {
  if (id < 0 || id >= tok_.vocab_size()) tok_.id_to_piece(id);  // throws Error naming the id
  if (skipped(id)) return {};
  ids_.push_back(id);
  return emit(ids_.size(), false);
}

std::string StreamDecoder::flush() { return emit(ids_.size(), true); }

}  // namespace ordo
