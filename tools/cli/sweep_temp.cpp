// Cell files through host-and-pid temporaries, and the stale ones removed (sweep_temp.hpp).
#include "sweep_temp.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

#include "ordo/ordo.hpp"

namespace fs = std::filesystem;

namespace ordo::cli::sweep {
namespace {

std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0 || !buf[0]) return "localhost";
  std::string h = buf;
  for (char& c : h)
    if (c == '/') c = '_';
  return h;
}

[[noreturn]] void fail(const std::string& path, const std::string& what, int err) {
  throw Error(path + ": " + what + ": " + std::strerror(err));
}

}  // namespace

void write_cell_file(const std::string& path, const std::string& bytes) {
  const fs::path p(path);
  const std::string tmp =
      (p.parent_path() / ("." + p.filename().string() + "." + host_name() + "." + std::to_string(::getpid()) + ".tmp"))
          .string();
  ::unlink(tmp.c_str());  // a dead run's, whose pid this run now has
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) fail(path, "cannot create '" + tmp + "'", errno);
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int e = n < 0 ? errno : EIO;
      ::close(fd), ::unlink(tmp.c_str());
      fail(path, "cannot write '" + tmp + "'", e);
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    const int e = errno;
    ::unlink(tmp.c_str());
    fail(path, "cannot sync '" + tmp + "'", e);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    ::unlink(tmp.c_str());
    fail(path, "cannot rename '" + tmp + "' into place", e);
  }
}

size_t remove_stale_temps(const std::string& dir, const std::string& name) {
  const std::string prefix = "." + name, me = host_name();
  const auto now = std::chrono::system_clock::now();
  size_t removed = 0;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string f = it->path().filename().string();
    if (f.compare(0, prefix.size(), prefix) != 0 || f.size() < 5 || f[0] != '.') continue;
    // .NAME.HOST.PID.tmp (write_cell_file's) or .NAME.ordo-XXXXXX (an OutputFile's: no pid to ask).
    bool gone = false;
    if (f.compare(f.size() - 4, 4, ".tmp") == 0) {
      const std::string hp = f.substr(0, f.size() - 4);
      const size_t dot = hp.rfind('.');  // f starts with '.': never npos
      const std::string writer = hp.substr(0, dot), here = "." + me;
      const long long pid = std::atoll(hp.c_str() + dot + 1);
      const bool mine =
          writer.size() > here.size() && writer.compare(writer.size() - here.size(), here.size(), here) == 0;
      gone = mine && pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
    } else if (f.find(".ordo-") == std::string::npos) {
      continue;
    }
    struct stat st;
    if (::lstat(it->path().c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    const auto age = now - std::chrono::system_clock::from_time_t(st.st_mtime);
    if (gone || age > std::chrono::seconds(kStaleTempSeconds)) removed += ::unlink(it->path().c_str()) == 0;
  }
  return removed;
}

}  // namespace ordo::cli::sweep
