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

// decode() drops a skipped special before anything else, so the stream can forget it.
bool StreamDecoder::skipped(int32_t id) const {
  return skip_special_ && tok_.decode({id}, true).empty() && !tok_.decode({id}, false).empty();
}

StreamDecoder::StreamDecoder(const Tokenizer& tok, std::vector<int32_t> context, bool skip_special)
    : tok_(tok), skip_special_(skip_special) {
  for (int32_t id : context)
    if (!skipped(id)) ids_.push_back(id);
  // The anchor: the token of "a". Its text as the first token must hold a visible character (that
  // ends the start-of-text rules), be whole characters, and not be a special token's.
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
  if (good_start(prefix_ids_)) return;
  if (can_restart_behind_anchor()) {
    restart_behind_anchor();
  } else {
    while (prefix_ids_ > 0 && !good_start(prefix_ids_)) --prefix_ids_;
    prefix_text_ = window_text(prefix_ids_, read_ids_);
  }
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
  ids.insert(ids.end(), ids_.begin() + static_cast<std::ptrdiff_t>(prefix_ids_), ids_.begin() + static_cast<std::ptrdiff_t>(end));
  ids.insert(ids.end(), after.begin(), after.end());
  std::string text = tok_.decode(ids, skip_special_);
  if (!anchored_) return text;
  if (!td::starts_with(text, anchor_text_)) return std::nullopt;
  return text.substr(anchor_text_.size());
}

// The window can restart behind the anchor at read_ids_ if what is shown joins the anchor the way
// the anchor joins itself: a decoder that holds back trailing spaces (T5), puts the space on the
// token before (a "</w>" suffix), or has not left the start of the text yet, would not.
bool StreamDecoder::can_restart_behind_anchor() const {
  if (anchor_id_ < 0 || td::ends_with(prefix_text_, kReplacement)) return false;  // maybe part of a character
  const auto joined = decode_window(read_ids_, {anchor_id_});
  return joined && *joined == prefix_text_ + anchor_join_;
}

void StreamDecoder::restart_behind_anchor() {
  if (!anchored_) run_start_ = prefix_ids_;
  anchored_ = true;
  prefix_ids_ = read_ids_;
  prefix_text_.clear();
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
  if (read_ids_ - prefix_ids_ > kMaxWindow && can_restart_behind_anchor()) restart_behind_anchor();
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
