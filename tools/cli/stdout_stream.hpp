// std::cout through C stdio, keeping why the first write to stdout failed, and the check on it.
#pragma once

#include <atomic>
#include <cstdio>
#include <streambuf>

namespace ordo::cli {

// An unbuffered streambuf writing through `f` (so std::cout and printf keep one order, as with
// sync_with_stdio) that remembers the errno of its first failed write. Without it a failure found
// later has lost its reason: std::cerr flushes std::cout before each progress line, and by the
// time the command checks stdout, errno says whatever a library call set since (seen: EAGAIN).
class StdioWriteBuf : public std::streambuf {
 public:
  explicit StdioWriteBuf(std::FILE* f) : f_(f) {}
  // errno of the first failed write or flush, 0 if none failed.
  int first_error() const { return error_.load(std::memory_order_acquire); }

 protected:
  int_type overflow(int_type c) override;
  std::streamsize xsputn(const char* s, std::streamsize n) override;
  int sync() override;

 private:
  void note_failure(int err);
  std::FILE* f_;
  std::atomic<int> error_{0};
};

// Routes std::cout through a StdioWriteBuf on stdout, for the rest of the process (main(), once).
void keep_stdout_errors();

// Throws Error("stdout: <reason>") once a write to std::cout / stdout has failed (closed pipe
// handled by SIGPIPE as usual, full disk, closed descriptor). `flush` flushes both first: main()
// calls it after every command, streaming output after each piece so a failure stops the run.
void check_stdout(bool flush = true);

}  // namespace ordo::cli
