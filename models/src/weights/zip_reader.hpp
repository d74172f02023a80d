// A memory-mapped ZIP archive of STORED entries: the container PyTorch's torch.save writes.
//
// Only what such files need: the end-of-central-directory record (ZIP64 too, for shards over
// 4 GiB), the central directory and each entry's local header, every offset and size checked
// against the file before use. Entries are never decompressed: asking for the bytes of a
// compressed or encrypted entry is an Error naming it. All errors start with the archive's path.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace ordo {

struct ZipEntry {
  std::string name;
  uint64_t data_offset = 0;  // first byte of the entry's data in the file
  uint64_t size = 0;         // bytes (stored: compressed size == uncompressed size)
  uint16_t method = 0;       // 0 = stored
  uint16_t flags = 0;        // bit 0: encrypted
};

class ZipReader {
 public:
  // Maps `path` read-only and reads its directory. Errors name the file and what is wrong.
  static ZipReader open(const std::string& path);

  const std::string& path() const { return path_; }
  const std::vector<ZipEntry>& entries() const { return entries_; }
  const ZipEntry* find(const std::string& name) const;  // nullptr when absent
  // The entry's bytes inside the mapping: Error when it is compressed or encrypted.
  const unsigned char* data(const ZipEntry& e) const;
  // Keeps the mapping alive (Tensor::owner of tensors that point into it).
  const std::shared_ptr<void>& mapping() const { return mapping_; }
  std::pair<const unsigned char*, size_t> mapped_bytes() const { return {base_, static_cast<size_t>(size_)}; }

 private:
  std::string path_;
  std::shared_ptr<void> mapping_;
  const unsigned char* base_ = nullptr;
  uint64_t size_ = 0;
  std::vector<ZipEntry> entries_;
  std::map<std::string, size_t> by_name_;
};

}  // namespace ordo
