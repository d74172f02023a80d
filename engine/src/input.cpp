// Reading input safely: size-capped files, JSON nesting limits and out-of-memory errors.
#include "ordo/input.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace ordo {

std::string read_input_file(const std::string& path, uint64_t max_bytes, const char* what) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw Error(path + ": cannot open: " + std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw Error(path + ": cannot stat: " + std::strerror(errno));
  if (S_ISDIR(st.st_mode)) throw Error(path + ": cannot open: is a directory");
  if (!S_ISREG(st.st_mode)) throw Error(path + ": not a regular file (FIFOs, devices and sockets are refused)");
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size > max_bytes)
    throw Error(path + ": is " + std::to_string(size) + " bytes, more than the limit of " + std::to_string(max_bytes) +
                " bytes for " + what);
  std::string text(static_cast<size_t>(size), '\0');
  size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = ::read(fd, &text[got], text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error(path + ": read failed: " + std::strerror(errno));
    if (n == 0) break;  // the file shrank while being read
    got += static_cast<size_t>(n);
  }
  text.resize(got);
  return text;
}

void check_json_limits(const char* text, size_t size, const std::string& origin) {
  if (size > kMaxJsonBytes)
    throw Error(origin + ": JSON document of " + std::to_string(size) + " bytes exceeds the limit of " +
                std::to_string(kMaxJsonBytes) + " bytes");
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < size; ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth)
        throw Error(origin + ": JSON nests arrays/objects more than " + std::to_string(kMaxJsonDepth) +
                    " levels deep (at byte " + std::to_string(i) + ")");
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
}

Error out_of_memory(const std::string& what, uint64_t bytes) {
  char size[32];
  if (bytes >= (uint64_t{1} << 20))
    std::snprintf(size, sizeof size, "%.0f MiB", static_cast<double>(bytes) / (1 << 20));
  else if (bytes >= 1024)
    std::snprintf(size, sizeof size, "%.0f KiB", static_cast<double>(bytes) / 1024);
  else
    std::snprintf(size, sizeof size, "%llu bytes", static_cast<unsigned long long>(bytes));
  return Error("out of memory allocating " + std::string(size) + " for " + what + " (ulimit -v?)");
}

}  // namespace ordo
