// PCRE2 (UTF + UCP) patterns for Split, Replace and byte-level pre-tokenization, and the
// NormalizedString::split behaviours that turn matches into pieces.
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <new>

#include "hf.hpp"

namespace ordo::tokenizer_detail::hf {

const char* gpt2_pattern() { return R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)"; }

namespace {
std::string pcre2_message(int code) {
  PCRE2_UCHAR msg[256];
  pcre2_get_error_message(code, msg, sizeof msg);
  return reinterpret_cast<const char*>(msg);
}

// A linear pattern with a repeated group ((?:\p{L}|\p{N})+) uses JIT stack per repetition: the
// default 32 KB runs out near 3,000 letters. One find_all call grows its own JIT stack (Regex is
// shared between threads) up to kMaxJitStack, then runs the interpreter, whose backtracking lives
// on the heap under a limit; only a failure there is an error.
constexpr size_t kFirstJitStack = size_t{1} << 20;
constexpr size_t kMaxJitStack = size_t{256} << 20;
constexpr uint32_t kInterpreterHeapKiB = uint32_t{1} << 20;  // 1 GiB
constexpr uint32_t kMinMatchLimit = 10000000;                // PCRE2's default

class Matcher {
 public:
  Matcher(const pcre2_code* code, const std::string& s)
      : code_(code), s_(s), md_(pcre2_match_data_create_from_pattern(code, nullptr), pcre2_match_data_free) {}
  ~Matcher() {
    if (stack_) pcre2_jit_stack_free(stack_);
    if (ctx_) pcre2_match_context_free(ctx_);
  }
  Matcher(const Matcher&) = delete;
  Matcher& operator=(const Matcher&) = delete;

  int match(size_t pos) {
    int rc = run(pos, 0);
    while (rc == PCRE2_ERROR_JIT_STACKLIMIT && stack_size_ < kMaxJitStack) {
      grow_stack();
      rc = run(pos, 0);
    }
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {
      // Linear in the subject for a linear pattern; bounds a pathological one.
      const uint64_t limit = std::max<uint64_t>(kMinMatchLimit, uint64_t{16} * s_.size());
      pcre2_set_match_limit(context(), static_cast<uint32_t>(std::min<uint64_t>(limit, UINT32_MAX)));
      pcre2_set_heap_limit(context(), kInterpreterHeapKiB);
      rc = run(pos, PCRE2_NO_JIT);
    }
    return rc;
  }
  const PCRE2_SIZE* ovector() const { return pcre2_get_ovector_pointer(md_.get()); }

 private:
  int run(size_t pos, uint32_t extra) {
    return pcre2_match(code_, reinterpret_cast<PCRE2_SPTR>(s_.data()), s_.size(), pos, PCRE2_NO_UTF_CHECK | extra,
                       md_.get(), ctx_);
  }
  pcre2_match_context* context() {
    if (!ctx_) ctx_ = pcre2_match_context_create(nullptr);
    if (!ctx_) throw std::bad_alloc();
    return ctx_;
  }
  void grow_stack() {
    stack_size_ = stack_size_ ? stack_size_ * 16 : kFirstJitStack;
    if (stack_) pcre2_jit_stack_free(stack_);
    stack_ = pcre2_jit_stack_create(32 * 1024, stack_size_, nullptr);
    if (!stack_) throw std::bad_alloc();
    pcre2_jit_stack_assign(context(), nullptr, stack_);
  }

  const pcre2_code* code_;
  const std::string& s_;
  std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> md_;
  pcre2_match_context* ctx_ = nullptr;
  pcre2_jit_stack* stack_ = nullptr;
  size_t stack_size_ = 0;
};

std::string brief_pattern(const std::string& p) { return p.size() > 80 ? p.substr(0, 77) + "..." : p; }
}  // namespace

Regex::Regex(const std::string& pattern, bool literal, const std::string& where) : pattern_(pattern), where_(where) {
  int err = 0;
  PCRE2_SIZE off = 0;
  const uint32_t flags = PCRE2_UTF | (literal ? PCRE2_LITERAL : PCRE2_UCP);  // LITERAL refuses UCP
  pcre2_code* code =
      pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), flags, &err, &off, nullptr);
  if (!code) fail(where, "cannot compile regex at offset " + std::to_string(off) + ": " + pcre2_message(err));
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // optional speed-up; falls back to the interpreter
  code_ = std::shared_ptr<void>(code, [](void* p) { pcre2_code_free(static_cast<pcre2_code*>(p)); });
}

std::vector<std::pair<size_t, size_t>> Regex::find_all(const std::string& s) const {
  Matcher m(static_cast<const pcre2_code*>(code_.get()), s);
  std::vector<std::pair<size_t, size_t>> out;
  size_t pos = 0;
  while (pos <= s.size()) {
    const int rc = m.match(pos);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) fail(where_, "regex '" + brief_pattern(pattern_) + "' match failed: " + pcre2_message(rc));
    const PCRE2_SIZE* ov = m.ovector();
    const size_t b = ov[0], e = ov[1];
    if (e == b) {  // empty match: step over one code point
      if (b >= s.size()) break;
      size_t next = b;
      next_cp(s, next);
      pos = next;
      continue;
    }
    out.emplace_back(b, e);
    pos = e;
  }
  return out;
}

std::string Regex::replace_all(const std::string& s, const std::string& with) const {
  std::string out;
  size_t last = 0;
  for (const auto& [b, e] : find_all(s)) {
    out.append(s, last, b - last);
    out += with;
    last = e;
  }
  out.append(s, last, std::string::npos);
  return out;
}

Regex make_pattern(const json& pattern, const std::string& where) {
  if (pattern.is_object() && pattern.contains("Regex") && pattern["Regex"].is_string())
    return Regex(pattern["Regex"].get<std::string>(), false, where + ".Regex");
  if (pattern.is_object() && pattern.contains("String") && pattern["String"].is_string())
    return Regex(pattern["String"].get<std::string>(), true, where + ".String");
  fail(where, "must be {\"String\": ...} or {\"Regex\": ...}");
}

std::vector<Span> regex_spans(const Regex& re, const std::string& s) {
  std::vector<Span> out;
  size_t last = 0;
  for (const auto& [b, e] : re.find_all(s)) {
    if (last < b) out.push_back({last, b, false});
    out.push_back({b, e, true});
    last = e;
  }
  if (last < s.size()) out.push_back({last, s.size(), false});
  return out;
}

SplitBehavior split_behavior(const std::string& name, const std::string& where) {
  if (name == "Removed") return SplitBehavior::Removed;
  if (name == "Isolated") return SplitBehavior::Isolated;
  if (name == "MergedWithPrevious") return SplitBehavior::MergedWithPrevious;
  if (name == "MergedWithNext") return SplitBehavior::MergedWithNext;
  if (name == "Contiguous") return SplitBehavior::Contiguous;
  fail(where, "unknown split behavior '" + name + "'");
}

std::vector<std::pair<size_t, size_t>> apply_behavior(std::vector<Span> spans, SplitBehavior behavior, bool invert) {
  if (invert)
    for (auto& sp : spans) sp.match = !sp.match;
  std::vector<Span> kept;  // match = "remove this piece"
  bool previous = false;
  switch (behavior) {
    case SplitBehavior::Removed: kept = spans; break;
    case SplitBehavior::Isolated:
      for (const auto& sp : spans) kept.push_back({sp.begin, sp.end, false});
      break;
    case SplitBehavior::MergedWithPrevious:
      for (const auto& sp : spans) {
        if (sp.match && !previous && !kept.empty())
          kept.back().end = sp.end;
        else
          kept.push_back({sp.begin, sp.end, false});
        previous = sp.match;
      }
      break;
    case SplitBehavior::MergedWithNext:
      for (auto it = spans.rbegin(); it != spans.rend(); ++it) {
        if (it->match && !previous && !kept.empty())
          kept.back().begin = it->begin;
        else
          kept.push_back({it->begin, it->end, false});
        previous = it->match;
      }
      std::reverse(kept.begin(), kept.end());
      break;
    case SplitBehavior::Contiguous:
      for (const auto& sp : spans) {
        if (sp.match == previous && !kept.empty())
          kept.back().end = sp.end;
        else
          kept.push_back({sp.begin, sp.end, false});
        previous = sp.match;
      }
      break;
  }
  std::vector<std::pair<size_t, size_t>> out;
  for (const auto& sp : kept)
    if (!sp.match && sp.begin != sp.end) out.emplace_back(sp.begin, sp.end);
  return out;
}

}  // namespace ordo::tokenizer_detail::hf
