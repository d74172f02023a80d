// StdioWriteBuf: std::cout's path to stdout keeps the first failure's reason and stdio's order.
#include "stdout_stream.hpp"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdio>
#include <ostream>
#include <sstream>
#include <string>

#include "support/cli.hpp"
#include "support/golden.hpp"

using ordo::cli::StdioWriteBuf;

namespace {

struct File {
  std::FILE* f;
  File(const char* path, const char* mode) : f(std::fopen(path, mode)) {}
  ~File() {
    if (f) std::fclose(f);
  }
};

}  // namespace

// The failure the buffer's own write-out met, not whatever errno holds when someone looks.
TEST(StdioWriteBuf, KeepsTheReasonOfAFailedWriteOut) {
  File full("/dev/full", "w");
  ASSERT_NE(full.f, nullptr);
  StdioWriteBuf buf(full.f);
  std::ostream os(&buf);
  os << std::string(3 * BUFSIZ, 'x');  // more than stdio buffers: written out, and refused
  EXPECT_TRUE(os.fail());
  errno = EAGAIN;  // a later library call's leftover, as seen in CI
  EXPECT_EQ(buf.first_error(), ENOSPC);
  os.clear();
  errno = 0;
  os << "more" << std::flush;  // a later failure does not replace the first reason
  EXPECT_EQ(buf.first_error(), ENOSPC);
}

// A short write sits in stdio's buffer; the failure comes with the flush (std::cerr's tie).
TEST(StdioWriteBuf, KeepsTheReasonOfAFailedFlush) {
  File full("/dev/full", "w");
  ASSERT_NE(full.f, nullptr);
  StdioWriteBuf buf(full.f);
  std::ostream os(&buf);
  std::stringbuf progress;
  std::ostream err(&progress);
  err.tie(&os);
  os << "ppl table header\n";
  EXPECT_FALSE(os.fail());
  EXPECT_EQ(buf.first_error(), 0);
  err << "1 of 1 rows\n";  // a tied stream flushes os first, as std::cerr does std::cout
  EXPECT_TRUE(os.fail());
  EXPECT_EQ(progress.str(), "1 of 1 rows\n");
  errno = EAGAIN;
  EXPECT_EQ(buf.first_error(), ENOSPC);
}

// Bytes through the stream and through printf on the same FILE arrive in the order written.
TEST(StdioWriteBuf, KeepsOneOrderWithStdio) {
  const std::string path = ordo::test::make_temp_dir("stdio-buf") + "/out.txt";
  {
    File out(path.c_str(), "w");
    ASSERT_NE(out.f, nullptr);
    StdioWriteBuf buf(out.f);
    std::ostream os(&buf);
    os << "one ";
    std::fprintf(out.f, "two ");
    os << 3 << ' ' << std::string(2 * BUFSIZ, 'y') << '\n';
    std::fputs("four\n", out.f);
    os << std::flush;
    EXPECT_FALSE(os.fail());
    EXPECT_EQ(buf.first_error(), 0);
  }
  EXPECT_EQ(ordo::test::read_file(path), "one two 3 " + std::string(2 * BUFSIZ, 'y') + "\nfour\n");
}
