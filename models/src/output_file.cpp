// Atomic, checked output files and the output-is-not-an-input check (ordo/output_file.hpp).
#include "ordo/output_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <utility>

#include "ordo/tensor.hpp"

namespace fs = std::filesystem;

namespace ordo {

namespace {

[[noreturn]] void fail(const std::string& path, const std::string& what, int err) {
  throw Error(path + ": " + what + ": " + std::strerror(err));
}

// The directory part of `path` as open() would use it ("." for a bare name; trailing slashes of
// the name are dropped first).
std::string parent_of(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string base_of(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// The process umask, read without changing it (umask() both reads and sets: not thread-safe).
mode_t current_umask() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("Umask:", 0) == 0) return static_cast<mode_t>(std::strtoul(line.c_str() + 6, nullptr, 8));
  const mode_t m = ::umask(022);
  ::umask(m);
  return m;
}

std::string real_path(const std::string& p) {
  char buf[PATH_MAX];
  return ::realpath(p.c_str(), buf) ? std::string(buf) : std::string();
}

using Key = std::pair<dev_t, ino_t>;
bool key_of(const std::string& p, Key* k) {
  struct stat st {};
  if (::stat(p.c_str(), &st) != 0) return false;
  *k = {st.st_dev, st.st_ino};
  return true;
}

// `path` made absolute with every existing component resolved physically (as the kernel will when
// it is opened or created); components that do not exist yet are appended lexically.
fs::path resolve_for_write(const std::string& path) {
  fs::path p = fs::path(path).lexically_normal();
  if (p.is_relative()) p = fs::current_path() / p;
  fs::path rest;
  fs::path probe = fs::path(path);
  if (probe.is_relative()) probe = fs::current_path() / probe;
  // Walk up (textually, as given) until a prefix exists; resolve it; re-append the rest.
  while (true) {
    std::string prefix = probe.string();
    while (prefix.size() > 1 && prefix.back() == '/') prefix.pop_back();
    const std::string r = real_path(prefix);
    if (!r.empty()) return (fs::path(r) / rest).lexically_normal();
    const std::string parent = parent_of(prefix);
    if (parent == prefix) return p;
    rest = fs::path(base_of(prefix)) / rest;
    probe = parent;
  }
}

// Paths written where they are rather than replaced: anything that is not a regular file (devices,
// FIFOs, terminals) and any name under /dev or /proc (/dev/stdout redirected to a file is a link
// to that file: replacing it would replace /dev/stdout itself).
bool in_place(const std::string& path, bool exists, const struct stat& st) {
  return (exists && !S_ISREG(st.st_mode)) || path.rfind("/dev/", 0) == 0 || path.rfind("/proc/", 0) == 0;
}

}  // namespace

OutputFile::OutputFile(std::string path) : path_(std::move(path)) {
  if (path_.empty()) throw Error("output path is empty");
  struct stat st {};
  const bool exists = ::stat(path_.c_str(), &st) == 0;
  if (exists && S_ISDIR(st.st_mode)) throw Error(path_ + ": is a directory");
  if (in_place(path_, exists, st)) {
    // A device, FIFO or terminal: written in place (a FIFO waits for its reader). A regular file
    // behind /dev/stdout is appended to, after what the command printed before.
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CLOEXEC | (exists && S_ISREG(st.st_mode) ? O_APPEND : 0));
    if (fd_ < 0) fail(path_, "cannot open for writing", errno);
    return;
  }
  struct stat lst;
  const bool link_or_file = ::lstat(path_.c_str(), &lst) == 0;
  const mode_t mode = exists && link_or_file && S_ISREG(lst.st_mode) ? (st.st_mode & 07777) : (0666 & ~current_umask());
  const std::string dir = parent_of(path_);
  std::string tmpl = (dir == "/" ? "" : dir) + "/." + base_of(path_) + ".ordo-XXXXXX";
  if (dir == "." && path_.find('/') == std::string::npos) tmpl = "." + base_of(path_) + ".ordo-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  fd_ = ::mkostemp(buf.data(), O_CLOEXEC);
  if (fd_ < 0) {
    fail(path_, "cannot create a file in directory '" + dir + "'", errno);
  }
  tmp_ = buf.data();
  if (::fchmod(fd_, mode) != 0) {
    const int err = errno;
    ::close(fd_);
    fd_ = -1;
    ::unlink(tmp_.c_str());
    fail(path_, "cannot set permissions", err);
  }
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
    if (w < 0) fail(path_, "write failed", errno);
    if (w == 0) fail(path_, "write failed", ENOSPC);
    p += w;
    n -= static_cast<size_t>(w);
  }
}

void OutputFile::commit() {
  if (fd_ < 0) throw Error(path_ + ": committed twice");
  if (tmp_.empty()) {  // written in place: only the close can still report an error
    const int rc = ::close(fd_);
    fd_ = -1;
    if (rc != 0 && errno != EINTR) fail(path_, "write failed", errno);
    return;
  }
  if (::fsync(fd_) != 0 && errno != EINVAL) fail(path_, "cannot sync", errno);
  const int rc = ::close(fd_);
  fd_ = -1;
  if (rc != 0 && errno != EINTR) fail(path_, "write failed", errno);
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) fail(path_, "cannot rename '" + tmp_ + "' into place", errno);
  tmp_.clear();
  // The rename is durable once the directory is synced (best effort: some filesystems refuse).
  const int dfd = ::open(parent_of(path_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    (void)::fsync(dfd);
    ::close(dfd);
  }
}

void write_file_atomic(const std::string& path, std::string_view bytes) {
  OutputFile f(path);
  f.write(bytes);
  f.commit();
}

void check_output_outside_inputs(const std::string& path, const std::vector<std::string>& inputs) {
  if (inputs.empty()) return;
  std::map<Key, std::string> dirs;    // input directory → the input as named by the user
  std::map<Key, std::string> files;   // every file of an input (links followed) → the input
  std::set<std::string> file_inputs;  // inputs that are files themselves (a text, a base): no "model"
  for (const std::string& in : inputs) {
    struct stat st;
    if (in.empty() || ::stat(in.c_str(), &st) != 0) continue;
    if (!S_ISDIR(st.st_mode)) {
      files.emplace(Key{st.st_dev, st.st_ino}, in);
      file_inputs.insert(in);
      continue;
    }
    dirs.emplace(Key{st.st_dev, st.st_ino}, in);
    std::error_code ec;
    size_t seen = 0;
    for (fs::recursive_directory_iterator it(in, ec), end; !ec && it != end && ++seen < 100000; it.increment(ec)) {
      Key k;
      if (!key_of(it->path().string(), &k)) continue;
      struct stat es;
      if (::stat(it->path().c_str(), &es) == 0 && S_ISDIR(es.st_mode))
        dirs.emplace(k, in);
      else
        files.emplace(k, in);
    }
  }
  auto refuse = [&](const std::string& in, const std::string& how) {
    const bool file = file_inputs.count(in) > 0;  // "a file of" the file itself would read oddly
    throw Error(path + ": " + (file ? std::string("is (a link to) the input file '") : how + " the input model '") +
                in + "'; refusing to overwrite it (choose another output path)");
  };
  Key k;
  if (key_of(path, &k)) {  // the output exists: is it (a link to) an input file or directory?
    if (auto f = files.find(k); f != files.end()) refuse(f->second, "is (a link to) a file of");
    if (auto d = dirs.find(k); d != dirs.end()) refuse(d->second, "is (a link to)");
  }
  // Every directory the output would be created in, resolved as the kernel will.
  std::vector<fs::path> chains = {resolve_for_write(path)};
  const std::string real = real_path(path);
  if (!real.empty()) chains.emplace_back(real);
  for (const fs::path& resolved : chains) {
    for (fs::path p = resolved;; p = p.parent_path()) {
      if (key_of(p.string(), &k)) {
        if (auto d = dirs.find(k); d != dirs.end()) refuse(d->second, p == resolved ? "is" : "is inside");
        if (auto f = files.find(k); f != files.end()) refuse(f->second, "is (a link to) a file of");
      }
      if (p == p.parent_path() || p.empty()) break;
    }
  }
}

void check_output_path(const std::string& path, const std::vector<std::string>& inputs) {
  if (path.empty()) throw Error("output path is empty");
  check_output_outside_inputs(path, inputs);
  struct stat st {};
  const bool exists = ::stat(path.c_str(), &st) == 0;
  if (exists && S_ISDIR(st.st_mode)) throw Error(path + ": is a directory");
  if (in_place(path, exists, st)) {
    if (!exists) fail(path, "cannot open for writing", ENOENT);
    return;
  }
  const std::string dir = parent_of(path);
  if (::stat(dir.c_str(), &st) != 0) fail(path, "cannot write in directory '" + dir + "'", errno);
  if (!S_ISDIR(st.st_mode)) fail(path, "cannot write in '" + dir + "'", ENOTDIR);
  if (::access(dir.c_str(), W_OK | X_OK) != 0) fail(path, "cannot write in directory '" + dir + "'", errno);
}

}  // namespace ordo
