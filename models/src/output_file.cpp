// Atomic, checked output files (ordo/output_file.hpp).
#include "ordo/output_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "ordo/tensor.hpp"

namespace ordo {

namespace {
[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw Error(path + ": " + what + ": " + std::strerror(errno));
}
}  // namespace

OutputFile::OutputFile(std::string path) : path_(std::move(path)) {
  tmp_ = path_ + ".tmp." + std::to_string(::getpid());
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) fail(path_, "cannot create '" + tmp_ + "'");
}

OutputFile::~OutputFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!tmp_.empty()) ::unlink(tmp_.c_str());
}

void OutputFile::write(const void* data, size_t n) {
  if (fd_ < 0) throw Error(path_ + ": write after commit");
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::write(fd_, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) fail(path_, "write failed");
    p += w;
    n -= static_cast<size_t>(w);
  }
}

void OutputFile::commit() {
  if (fd_ < 0) throw Error(path_ + ": committed twice");
  if (::fsync(fd_) != 0 && errno != EINVAL) fail(path_, "cannot sync");
  int rc = ::close(fd_);
  fd_ = -1;
  if (rc != 0) fail(path_, "write failed");
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) fail(path_, "cannot rename '" + tmp_ + "' into place");
  tmp_.clear();
}

void write_file_atomic(const std::string& path, std::string_view bytes) {
  OutputFile f(path);
  f.write(bytes);
  f.commit();
}

}  // namespace ordo
