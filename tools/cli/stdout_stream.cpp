// std::cout through C stdio, keeping why the first write to stdout failed (stdout_stream.hpp).
#include "stdout_stream.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <string>

#include "ordo/ordo.hpp"

namespace ordo::cli {

void StdioWriteBuf::note_failure(int err) {
  if (err == 0) return;  // an error flag from a write made elsewhere: its reason is not known here
  int none = 0;
  error_.compare_exchange_strong(none, err, std::memory_order_acq_rel);
}

StdioWriteBuf::int_type StdioWriteBuf::overflow(int_type c) {
  if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
  errno = 0;
  if (std::fputc(traits_type::to_char_type(c), f_) == EOF || std::ferror(f_)) {
    note_failure(errno);
    return traits_type::eof();
  }
  return c;
}

std::streamsize StdioWriteBuf::xsputn(const char* s, std::streamsize n) {
  errno = 0;
  const size_t wrote = std::fwrite(s, 1, static_cast<size_t>(n), f_);
  if (wrote < static_cast<size_t>(n) || std::ferror(f_)) note_failure(errno);
  return static_cast<std::streamsize>(wrote);
}

int StdioWriteBuf::sync() {
  errno = 0;
  if (std::fflush(f_) == 0 && !std::ferror(f_)) return 0;
  note_failure(errno);
  return -1;
}

namespace {
// Never destroyed: std::cout is flushed at exit, after function-local statics are gone.
StdioWriteBuf* g_stdout_buf = nullptr;
}  // namespace

void keep_stdout_errors() {
  if (g_stdout_buf) return;
  std::cout.flush();
  g_stdout_buf = new StdioWriteBuf(stdout);
  std::cout.rdbuf(g_stdout_buf);
}

void check_stdout(bool flush) {
  const auto failed = [] { return std::cout.fail() || std::ferror(stdout); };
  int err = 0;
  if (!failed()) {
    if (!flush) return;
    errno = 0;
    std::cout.flush();
    std::fflush(stdout);
    if (!failed()) return;
    err = errno;  // this flush failed: errno is its reason
  }
  if (const int first = g_stdout_buf ? g_stdout_buf->first_error() : 0) err = first;  // its own reason
  if (err == 0) {
    // Failed earlier, behind the caller's back (a printf's full buffer): errno is stale by now.
    // Ask again: bytes stdio kept, else an empty write, which a full device or a closed
    // descriptor refuses too.
    std::clearerr(stdout);
    errno = 0;
    if (std::fflush(stdout) != 0 || ::write(STDOUT_FILENO, "", 0) < 0) err = errno;
  }
  throw Error(std::string("stdout: ") + (err ? std::strerror(err) : "write failed"));
}

}  // namespace ordo::cli
