// ZIP central-directory reader over a read-only mapping (see zip_reader.hpp). Layouts follow
// PKWARE's APPNOTE.TXT: end of central directory (EOCD) 0x06054b50, ZIP64 locator 0x07064b50 and
// record 0x06064b50, central header 0x02014b50, local header 0x04034b50, ZIP64 extra field 0x0001.
#include "zip_reader.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "ordo/input.hpp"
#include "ordo/tensor.hpp"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "ZIP fields are little-endian");

namespace ordo {
namespace {

constexpr uint32_t kEocdSig = 0x06054b50, kZip64LocatorSig = 0x07064b50, kZip64EocdSig = 0x06064b50,
                   kCentralSig = 0x02014b50, kLocalSig = 0x04034b50;
constexpr uint64_t kEocdSize = 22, kCentralSize = 46, kLocalSize = 30, kZip64LocatorSize = 20, kZip64EocdSize = 56;

struct Mapping {
  void* addr = nullptr;
  size_t size = 0;
  ~Mapping() {
    if (addr) ::munmap(addr, size);
  }
};

[[noreturn]] void fail(const std::string& path, const std::string& msg) { throw Error(path + ": " + msg); }

template <class T>
T rd(const unsigned char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

std::string num(uint64_t v) { return std::to_string(v); }

// Fields of the ZIP64 extra block that replace central-header values of all ones, in APPNOTE's order.
void apply_zip64_extra(const std::string& path, const std::string& name, const unsigned char* extra, uint64_t len,
                       uint64_t* usize, uint64_t* csize, uint64_t* local) {
  uint64_t p = 0;
  while (p + 4 <= len) {
    const uint16_t id = rd<uint16_t>(extra + p), sz = rd<uint16_t>(extra + p + 2);
    if (p + 4 + sz > len) fail(path, "entry '" + name + "': extra field runs past its header");
    if (id == 0x0001) {
      uint64_t q = 0;
      for (uint64_t* f : {usize, csize, local}) {
        if (*f != 0xFFFFFFFFu) continue;
        if (q + 8 > sz) fail(path, "entry '" + name + "': ZIP64 extra field too short");
        *f = rd<uint64_t>(extra + p + 4 + q);
        q += 8;
      }
      return;
    }
    p += 4 + sz;
  }
  if (*usize == 0xFFFFFFFFu || *csize == 0xFFFFFFFFu || *local == 0xFFFFFFFFu)
    fail(path, "entry '" + name + "': sizes say ZIP64 but there is no ZIP64 extra field");
}

// Where the central directory is and how many entries it holds, from the end-of-central-directory
// record (and its ZIP64 record when the sizes say so), each checked against the file.
struct CentralDirectory {
  uint64_t entries, size, offset;
};

CentralDirectory find_central_directory(const std::string& path, const unsigned char* b, uint64_t size) {
  // The EOCD is the last 22 bytes plus a comment of at most 65535 bytes.
  uint64_t eocd = UINT64_MAX;
  const uint64_t lowest = size - kEocdSize > 65535 ? size - kEocdSize - 65535 : 0;
  for (uint64_t p = size - kEocdSize + 1; p-- > lowest;) {
    if (rd<uint32_t>(b + p) == kEocdSig && p + kEocdSize + rd<uint16_t>(b + p + 20) <= size) {
      eocd = p;
      break;
    }
  }
  if (eocd == UINT64_MAX) fail(path, "no end-of-central-directory record (not a zip archive, or truncated)");
  uint64_t n_entries = rd<uint16_t>(b + eocd + 10);
  uint64_t cd_size = rd<uint32_t>(b + eocd + 12);
  uint64_t cd_offset = rd<uint32_t>(b + eocd + 16);
  if (rd<uint16_t>(b + eocd + 4) != 0 || rd<uint16_t>(b + eocd + 6) != 0)
    fail(path, "multi-disk zip archives are not supported");
  uint64_t cd_end_limit = eocd;  // the central directory ends before the record that describes it
  if (n_entries == 0xFFFF || cd_size == 0xFFFFFFFFu || cd_offset == 0xFFFFFFFFu) {
    if (eocd < kZip64LocatorSize || rd<uint32_t>(b + eocd - kZip64LocatorSize) != kZip64LocatorSig)
      fail(path, "end-of-central-directory record says ZIP64 but there is no ZIP64 locator");
    const uint64_t rec = rd<uint64_t>(b + eocd - kZip64LocatorSize + 8);
    if (rec > eocd - kZip64LocatorSize || eocd - kZip64LocatorSize - rec < kZip64EocdSize ||
        rd<uint32_t>(b + rec) != kZip64EocdSig)
      fail(path, "ZIP64 end-of-central-directory offset " + num(rec) + " does not point at a ZIP64 record");
    if (rd<uint32_t>(b + rec + 16) != 0 || rd<uint32_t>(b + rec + 20) != 0)
      fail(path, "multi-disk zip archives are not supported");
    n_entries = rd<uint64_t>(b + rec + 32);
    cd_size = rd<uint64_t>(b + rec + 40);
    cd_offset = rd<uint64_t>(b + rec + 48);
    cd_end_limit = rec;
  }
  if (cd_offset > cd_end_limit || cd_size > cd_end_limit - cd_offset)
    fail(path, "central directory [" + num(cd_offset) + ", +" + num(cd_size) + ") lies outside the file (" + num(size) +
                   " bytes; truncated?)");
  if (n_entries > cd_size / kCentralSize)
    fail(path, "central directory of " + num(cd_size) + " bytes cannot hold the " + num(n_entries) +
                   " entries the end record claims");
  return {n_entries, cd_size, cd_offset};
}

}  // namespace

ZipReader ZipReader::open(const std::string& path) {
  ZipReader z;
  z.path_ = path;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) fail(path, std::string("cannot open: ") + std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    fail(path, "not a regular file");
  }
  z.size_ = static_cast<uint64_t>(st.st_size);
  if (z.size_ < kEocdSize) {
    ::close(fd);
    fail(path, "too short for a zip archive (" + num(z.size_) + " bytes; truncated?)");
  }
  auto m = std::make_shared<Mapping>();
  void* addr = ::mmap(nullptr, z.size_, PROT_READ, MAP_PRIVATE, fd, 0);
  const int map_errno = errno;
  ::close(fd);
  if (addr == MAP_FAILED && map_errno == ENOMEM) throw out_of_memory("mapping " + path, z.size_);
  if (addr == MAP_FAILED) fail(path, std::string("mmap failed: ") + std::strerror(map_errno));
  m->addr = addr;
  m->size = z.size_;
  z.mapping_ = m;
  z.base_ = static_cast<const unsigned char*>(addr);
  const unsigned char* b = z.base_;
  const uint64_t size = z.size_;

  const CentralDirectory cd = find_central_directory(path, b, size);
  const uint64_t n_entries = cd.entries, cd_size = cd.size, cd_offset = cd.offset;

  z.entries_.reserve(n_entries);
  uint64_t p = cd_offset;
  const uint64_t cd_end = cd_offset + cd_size;
  for (uint64_t i = 0; i < n_entries; ++i) {
    if (cd_end - p < kCentralSize || rd<uint32_t>(b + p) != kCentralSig)
      fail(path, "central directory entry " + num(i) + " at byte " + num(p) + " is malformed");
    ZipEntry e;
    e.flags = rd<uint16_t>(b + p + 8);
    e.method = rd<uint16_t>(b + p + 10);
    uint64_t csize = rd<uint32_t>(b + p + 20), usize = rd<uint32_t>(b + p + 24);
    const uint64_t nlen = rd<uint16_t>(b + p + 28), xlen = rd<uint16_t>(b + p + 30), clen = rd<uint16_t>(b + p + 32);
    uint64_t local = rd<uint32_t>(b + p + 42);
    if (cd_end - p - kCentralSize < nlen + xlen + clen)
      fail(path, "central directory entry " + num(i) + " runs past the central directory");
    e.name.assign(reinterpret_cast<const char*>(b + p + kCentralSize), nlen);
    apply_zip64_extra(path, e.name, b + p + kCentralSize + nlen, xlen, &usize, &csize, &local);
    p += kCentralSize + nlen + xlen + clen;

    if (e.method == 0 && csize != usize)
      fail(path, "stored entry '" + e.name + "' has compressed size " + num(csize) + " but size " + num(usize));
    e.size = csize;
    if (local > cd_offset || cd_offset - local < kLocalSize || rd<uint32_t>(b + local) != kLocalSig)
      fail(path, "entry '" + e.name + "': local header offset " + num(local) + " does not point at a local header");
    const uint64_t lnlen = rd<uint16_t>(b + local + 26), lxlen = rd<uint16_t>(b + local + 28);
    e.data_offset = local + kLocalSize + lnlen + lxlen;
    if (lnlen != nlen || std::memcmp(b + local + kLocalSize, e.name.data(), nlen) != 0)
      fail(path, "entry '" + e.name + "': its local header names another entry");
    if (e.data_offset > cd_offset || e.size > cd_offset - e.data_offset)
      fail(path, "entry '" + e.name + "': data [" + num(e.data_offset) + ", +" + num(e.size) +
                     ") runs past the entries into the central directory or the end of the file");
    if (!z.by_name_.emplace(e.name, z.entries_.size()).second) fail(path, "entry '" + e.name + "' appears twice");
    z.entries_.push_back(std::move(e));
  }
  return z;
}

const ZipEntry* ZipReader::find(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &entries_[it->second];
}

const unsigned char* ZipReader::data(const ZipEntry& e) const {
  if (e.flags & 1) fail(path_, "entry '" + e.name + "' is encrypted");
  if (e.method != 0)
    fail(path_, "entry '" + e.name + "' is compressed (method " + num(e.method) +
                    "); PyTorch stores checkpoint entries uncompressed and ordo reads only those");
  return base_ + e.data_offset;
}

}  // namespace ordo
