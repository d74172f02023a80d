// Files ordo writes for a user: built beside the target and renamed into place, every write checked.
#pragma once

#include <memory>
#include <string>
#include <string_view>

namespace ordo {

// One output file. Bytes go to a temporary file in the target's directory; commit() flushes, syncs
// and renames it over the target, so an error or a kill before commit() leaves whatever was at the
// path whole. Every failure (missing directory, full disk, failed close or rename) is an ordo::Error
// naming the target path. Destroyed without commit(), the temporary file is removed.
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
  std::string path_, tmp_;
  int fd_ = -1;
};

// The whole of `bytes` written to `path` through an OutputFile.
void write_file_atomic(const std::string& path, std::string_view bytes);

}  // namespace ordo
