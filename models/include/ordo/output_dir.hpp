// A model directory ordo writes for a user (quantize -o): built beside its target, swapped in whole.
#pragma once

#include <string>
#include <vector>

namespace ordo {

// The manifest ordo leaves in every directory it wrote this way: how it recognises its own earlier
// output (which it may replace) from a folder holding a user's other files (which it refuses).
inline constexpr const char* kOutputDirManifest = ".ordo-output.json";

// Files go to a new temporary directory beside `out` (path()); commit() writes the manifest and
// swaps it into place atomically (renameat2 RENAME_EXCHANGE, or RENAME_NOREPLACE for a new `out`),
// then removes what `out` held. A kill before commit() leaves `out` as it was (plus a hidden
// temporary directory); destroyed without commit(), the temporary directory is removed.
// Refused, with an ordo::Error naming `out`: `out` is, is inside, contains, or (through a symbolic
// or hard link) shares a file with one of `inputs`; `out` exists and is not a directory; `out` is
// not empty and not ordo's own earlier output, unless `replace`. A symbolic link at `out` is
// followed: the directory it names is replaced.
class OutputDir {
 public:
  OutputDir(std::string out, const std::vector<std::string>& inputs, bool replace, std::string tool);
  ~OutputDir();
  OutputDir(const OutputDir&) = delete;
  OutputDir& operator=(const OutputDir&) = delete;

  const std::string& path() const { return tmp_; }  // where the new files are written
  void commit();

 private:
  std::string out_, target_, tmp_, tool_;
  bool exists_ = false;
};

}  // namespace ordo
