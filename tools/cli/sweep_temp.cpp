// Cell files through host-and-pid temporaries, and the stale ones removed (sweep_temp.hpp).
#include "sweep_temp.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "ordo/ordo.hpp"

namespace fs = std::filesystem;

namespace ordo::cli::sweep {
namespace {

std::string first_line(const char* path) {
  std::ifstream f(path);
  std::string line;
  std::getline(f, line);
  return line;
}

[[noreturn]] void fail(const std::string& path, const std::string& what, int err) {
  throw Error(path + ": " + what + ": " + std::strerror(err));
}

}  // namespace

std::string writer_token() {
  char buf[256] = {};
  std::string h = ::gethostname(buf, sizeof buf - 1) == 0 && buf[0] ? buf : "localhost";
  std::error_code ec;
  std::string ns = fs::read_symlink("/proc/self/ns/pid", ec).string();  // "pid:[4026531836]"
  const size_t open = ns.find('[');
  ns = ec || open == std::string::npos ? "" : ns.substr(open + 1, ns.size() - open - 2);
  std::string t = h + "~" + first_line("/proc/sys/kernel/random/boot_id").substr(0, 8) + "~" + ns;
  for (char& c : t)
    if (c == '/' || c == '.' || c == ' ') c = '_';
  return t;
}

void write_cell_file(const std::string& path, const std::string& bytes) {
  const fs::path p(path);
  const std::string tmp = (p.parent_path() / ("." + p.filename().string() + "." + writer_token() + "." +
                                              std::to_string(::getpid()) + ".tmp"))
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
  if ((::fsync(fd) != 0 && errno != EINVAL) || ::close(fd) != 0) {  // EINVAL: a file system that cannot sync
    const int e = errno;
    ::unlink(tmp.c_str());
    fail(path, "cannot sync '" + tmp + "'", e);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    ::unlink(tmp.c_str());
    fail(path, "cannot rename '" + tmp + "' into place", e);
  }
  // The rename lasts a crash once the directory is synced (best effort: some file systems refuse).
  const int dfd = ::open(p.parent_path().empty() ? "." : p.parent_path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    (void)::fsync(dfd);
    ::close(dfd);
  }
}

size_t remove_stale_temps(const std::string& dir, const std::string& name) {
  const std::string prefix = "." + name, me = writer_token();
  const auto now = std::chrono::system_clock::now();
  size_t removed = 0;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string f = it->path().filename().string();
    if (f.compare(0, prefix.size(), prefix) != 0 || f.size() < 5 || f[0] != '.') continue;
    // .NAME.TOKEN.PID.tmp (write_cell_file's: TOKEN has no '.') or .NAME.ordo-XXXXXX (an
    // OutputFile's: no pid to ask).
    bool gone = false;
    if (f.compare(f.size() - 4, 4, ".tmp") == 0) {
      const std::string head = f.substr(0, f.size() - 4);
      const size_t pid_dot = head.rfind('.'), token_dot = pid_dot == 0 ? 0 : head.rfind('.', pid_dot - 1);
      const std::string pid_text = head.substr(pid_dot + 1),
                        token = head.substr(token_dot + 1, pid_dot - token_dot - 1);
      const bool digits =
          !pid_text.empty() && pid_text.size() < 10 && pid_text.find_first_not_of("0123456789") == std::string::npos;
      const long long pid = digits ? std::atoll(pid_text.c_str()) : 0;
      gone = token == me && pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
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
