// Reading untrusted input: a model directory is downloaded, so every file and every JSON document
// is checked against explicit limits before ordo allocates for it or recurses into it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <new>
#include <string>
#include <utility>

#include "ordo/tensor.hpp"  // ordo::Error

namespace ordo {

// Deepest nesting of arrays and objects accepted in a JSON document. Hugging Face files nest a few
// levels; the limit keeps every recursive walk of a parsed document (nlohmann's copy and dump,
// ordo's own readers) far from the stack's end.
constexpr int kMaxJsonDepth = 128;
// Largest JSON document ordo parses (its parsed form takes several times the text's size).
constexpr uint64_t kMaxJsonBytes = uint64_t{512} << 20;

// The whole content of `path`, which must be a regular file (a FIFO, device or directory is
// refused before any read, so nothing blocks) of at most `max_bytes`. Errors start with `path`:
// "<path>: cannot open: <reason>", "<path>: not a regular file", "<path>: is N bytes, more than
// the limit of M bytes for <what>".
std::string read_input_file(const std::string& path, uint64_t max_bytes, const char* what);

// Error "<origin>: <why>" unless `text` is at most kMaxJsonBytes and nests arrays/objects at most
// kMaxJsonDepth deep (strings are skipped, so brackets inside them do not count). Call it before
// parsing: the check is a linear scan without recursion.
void check_json_limits(const char* text, size_t size, const std::string& origin);
inline void check_json_limits(const std::string& text, const std::string& origin) {
  check_json_limits(text.data(), text.size(), origin);
}

// The Error for an allocation that failed: "out of memory allocating <size> for <what> (ulimit -v?)",
// the size in MiB (KiB or bytes when smaller). Every allocation ordo checks itself says it this way.
Error out_of_memory(const std::string& what, uint64_t bytes);

// Runs f(); any exception other than ordo::Error leaves as ordo::Error "<what>: <message>" (an
// allocation failure as "<what>: out of memory"), so callers of the public API see one type.
template <class F>
auto with_ordo_errors(const std::string& what, F&& f) -> decltype(f()) {
  try {
    return std::forward<F>(f)();
  } catch (const Error&) {
    throw;
  } catch (const std::bad_alloc&) {
    throw Error(what + ": out of memory (ulimit -v?)");
  } catch (const std::exception& e) {
    throw Error(what + ": " + e.what());
  }
}

}  // namespace ordo
