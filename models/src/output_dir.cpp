// Output model directories built beside their target and swapped in whole (ordo/output_dir.hpp).
#include "ordo/output_dir.hpp"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "ordo/output_file.hpp"
#include "ordo/tensor.hpp"

namespace fs = std::filesystem;

namespace ordo {

namespace {

[[noreturn]] void fail(const std::string& path, const std::string& what, int err) {
  throw Error(path + ": " + what + ": " + std::strerror(err));
}

std::string strip_slashes(std::string p) {
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  return p;
}

// The names in `dir` ordo's manifest says it wrote; empty when there is no readable manifest.
std::set<std::string> manifest_files(const fs::path& dir) {
  std::ifstream f(dir / kOutputDirManifest);
  std::set<std::string> names;
  if (!f) return names;
  try {
    const nlohmann::json j = nlohmann::json::parse(f);
    for (const auto& n : j.at("files")) names.insert(n.get<std::string>());
  } catch (const std::exception&) {
    names.clear();
  }
  return names;
}

bool same_file(const struct stat& a, const struct stat& b) { return a.st_dev == b.st_dev && a.st_ino == b.st_ino; }

}  // namespace

OutputDir::OutputDir(std::string out, const std::vector<std::string>& inputs, bool replace, std::string tool)
    : out_(strip_slashes(std::move(out))), tool_(std::move(tool)) {
  if (out_.empty()) throw Error("output directory path is empty");
  check_output_outside_inputs(out_, inputs);
  struct stat lst, st;
  const bool present = ::lstat(out_.c_str(), &lst) == 0;
  if (present && ::stat(out_.c_str(), &st) != 0)
    throw Error(out_ + ": is a symbolic link to nothing ('" + fs::read_symlink(out_).string() + "')");
  exists_ = present;
  if (exists_ && !S_ISDIR(st.st_mode)) throw Error(out_ + ": exists and is not a directory");
  std::error_code ec;
  if (exists_) {
    char buf[PATH_MAX];
    if (!::realpath(out_.c_str(), buf)) fail(out_, "cannot resolve", errno);
    target_ = buf;
    // An input inside the output would be removed with it; a file of the output linked to an
    // input file would still be the input's.
    for (const std::string& in : inputs) {
      char ib[PATH_MAX];
      if (in.empty() || !::realpath(in.c_str(), ib)) continue;
      for (fs::path p = ib;; p = p.parent_path()) {
        struct stat ps;
        if (::stat(p.c_str(), &ps) == 0 && same_file(ps, st))
          throw Error(out_ + ": holds the input model '" + in + "'; refusing to replace it");
        if (p == p.parent_path() || p.empty()) break;
      }
    }
    std::set<std::string> ours = manifest_files(target_);
    std::string foreign;
    for (fs::directory_iterator it(target_, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      check_output_outside_inputs(it->path().string(), inputs);
      if (name != kOutputDirManifest && !ours.count(name) && foreign.empty()) foreign = name;
    }
    if (ec) fail(out_, "cannot list", ec.value());
    if (!foreign.empty() && !replace)
      throw Error(
          out_ + ": not empty and not ordo's own earlier output (it holds '" + foreign +
          "'); refusing to mix two models: choose a new or empty directory, or ask to replace its contents (ordo "
          "quantize --replace)");
  } else {
    const fs::path parent = fs::path(out_).parent_path();
    if (!parent.empty()) {
      fs::create_directories(parent, ec);
      if (ec) throw Error(out_ + ": cannot create directory '" + parent.string() + "': " + ec.message());
    }
    target_ = out_;
  }
  const fs::path t(target_);
  const std::string parent = t.has_parent_path() ? t.parent_path().string() : ".";
  std::string tmpl = (parent.empty() ? "." : parent) + "/." + t.filename().string() + ".ordo-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (!::mkdtemp(buf.data())) fail(out_, "cannot create a directory in '" + parent + "'", errno);
  tmp_ = buf.data();
  const mode_t mode = exists_ ? (st.st_mode & 07777) : [] {
    const mode_t m = ::umask(022);  // mkdtemp makes 0700; a user's directory gets 0777 & ~umask
    ::umask(m);
    return 0777 & ~m;
  }();
  ::chmod(tmp_.c_str(), mode);
}

OutputDir::~OutputDir() {
  if (tmp_.empty()) return;
  std::error_code ec;
  fs::remove_all(tmp_, ec);
}

void OutputDir::commit() {
  if (tmp_.empty()) throw Error(out_ + ": committed twice");
  nlohmann::json manifest = {{"tool", tool_}, {"files", nlohmann::json::array()}};
  std::error_code ec;
  std::set<std::string> names;
  for (fs::directory_iterator it(tmp_, ec), end; !ec && it != end; it.increment(ec))
    names.insert(it->path().filename().string());
  for (const std::string& n : names) manifest["files"].push_back(n);
  write_file_atomic((fs::path(tmp_) / kOutputDirManifest).string(), manifest.dump(2) + "\n");
  if (exists_) {
    // One step: the new directory takes the old one's name, the old one the temporary name.
    if (::renameat2(AT_FDCWD, tmp_.c_str(), AT_FDCWD, target_.c_str(), RENAME_EXCHANGE) != 0) {
      if (errno != EINVAL && errno != ENOSYS) fail(out_, "cannot move '" + tmp_ + "' into place", errno);
      // No exchange on this filesystem: move the old one aside first (a kill in between leaves it
      // whole under the hidden name).
      const std::string old = tmp_ + ".old";
      if (::rename(target_.c_str(), old.c_str()) != 0) fail(out_, "cannot move the old directory aside", errno);
      if (::rename(tmp_.c_str(), target_.c_str()) != 0) {
        const int err = errno;
        (void)::rename(old.c_str(), target_.c_str());
        fail(out_, "cannot move '" + tmp_ + "' into place", err);
      }
      fs::remove_all(old, ec);
      tmp_.clear();
      return;
    }
    fs::remove_all(tmp_, ec);  // now the old contents
    tmp_.clear();
    return;
  }
  if (::renameat2(AT_FDCWD, tmp_.c_str(), AT_FDCWD, target_.c_str(), RENAME_NOREPLACE) != 0) {
    if (errno == EEXIST || errno == ENOTEMPTY) fail(out_, "appeared while it was being written", errno);
    if ((errno != EINVAL && errno != ENOSYS) || ::rename(tmp_.c_str(), target_.c_str()) != 0)
      fail(out_, "cannot move '" + tmp_ + "' into place", errno);
  }
  tmp_.clear();
}

}  // namespace ordo
