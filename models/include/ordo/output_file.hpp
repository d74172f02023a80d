// Files ordo writes for a user: built beside the target and renamed into place, every write checked.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ordo {

// One output file. Bytes go to a uniquely named temporary file in the target's directory; commit()
// flushes, syncs and renames it over the target, so an error or a kill before commit() leaves
// whatever was at the path whole. The new file keeps an existing target's permission bits (else
// 0666 & ~umask). A symbolic link at the path is replaced, never written through; a hard-linked
// target gets a new inode, so the other names keep the old bytes. A target that exists and is not
// a regular file (/dev/null, /dev/stdout, a FIFO, a terminal) is written directly instead (renaming
// over /dev/null would replace it), still checking every write and the close. Every failure
// (missing directory, full disk, failed close or rename) is an ordo::Error naming the target path.
// Destroyed without commit(), the temporary file is removed.
class OutputFile {
 public:
  explicit OutputFile(std::string path);
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  void write(const void* data, size_t n);
  void write(std::string_view text) { write(text.data(), text.size()); }
  void commit();
  const std::string& path() const { return path_; }

 private:
  std::string path_, tmp_;  // tmp_ empty: writing the target directly (not a regular file)
  int fd_ = -1;
};

// The whole of `bytes` written to `path` through an OutputFile.
void write_file_atomic(const std::string& path, std::string_view bytes);

// Refuses (ordo::Error naming `path` and the model) an output path that is, resolves to, or lies
// inside one of `inputs` (model directories or files), or that is a link (symbolic or hard) to a
// file of one of them. Paths are compared by device and inode after resolving links, so `..`,
// trailing slashes, relative paths and symlink chains do not hide an input.
void check_output_outside_inputs(const std::string& path, const std::vector<std::string>& inputs);

// Everything that can be known before an expensive run: `path` is not inside an input (above), is
// not a directory, and its directory exists and is writable. Error naming `path` otherwise.
void check_output_path(const std::string& path, const std::vector<std::string>& inputs);

}  // namespace ordo
