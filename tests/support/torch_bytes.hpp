// Byte builders for PyTorch checkpoint tests: stored zip archives (with offsets a test may
// corrupt) and protocol-2 pickles of state dicts, as torch.save writes them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ordo::test::torch_bytes {

inline void put16(std::string& s, uint32_t v) { s.append({char(v & 255), char((v >> 8) & 255)}); }
inline void put32(std::string& s, uint32_t v) {
  put16(s, v & 0xffff);
  put16(s, v >> 16);
}
inline void set32(std::string& s, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) s[at + i] = char((v >> (8 * i)) & 255);
}

struct ZipEntrySpec {
  std::string name, data;
  uint16_t method = 0;
};
// A stored zip (CRCs zero: ordo does not check them); offsets of what tests may corrupt.
struct Zip {
  std::string bytes;
  std::vector<size_t> local, central;  // per entry: local header, central header offsets
  size_t eocd = 0, cd_offset = 0, zip64_locator = 0;
};
inline void put64(std::string& s, uint64_t v) {
  put32(s, v & 0xffffffffu);
  put32(s, v >> 32);
}
// zip64: every size and offset in the ZIP64 extra field and records, as a writer does past 4 GiB.
inline Zip make_zip(const std::vector<ZipEntrySpec>& entries, bool zip64 = false) {
  Zip z;
  for (const auto& e : entries) {
    z.local.push_back(z.bytes.size());
    put32(z.bytes, 0x04034b50);
    put16(z.bytes, 20), put16(z.bytes, 0), put16(z.bytes, e.method), put16(z.bytes, 0), put16(z.bytes, 0);
    put32(z.bytes, 0), put32(z.bytes, e.data.size()), put32(z.bytes, e.data.size());
    put16(z.bytes, e.name.size()), put16(z.bytes, 0);
    z.bytes += e.name + e.data;
  }
  z.cd_offset = z.bytes.size();
  for (size_t i = 0; i < entries.size(); ++i) {
    const auto& e = entries[i];
    z.central.push_back(z.bytes.size());
    put32(z.bytes, 0x02014b50);
    put16(z.bytes, 20), put16(z.bytes, 20), put16(z.bytes, 0), put16(z.bytes, e.method), put16(z.bytes, 0),
        put16(z.bytes, 0);
    put32(z.bytes, 0), put32(z.bytes, e.data.size()), put32(z.bytes, e.data.size());
    if (zip64) set32(z.bytes, z.bytes.size() - 8, 0xffffffffu), set32(z.bytes, z.bytes.size() - 4, 0xffffffffu);
    put16(z.bytes, e.name.size()), put16(z.bytes, zip64 ? 28 : 0), put16(z.bytes, 0), put16(z.bytes, 0),
        put16(z.bytes, 0);
    put32(z.bytes, 0), put32(z.bytes, zip64 ? 0xffffffffu : z.local[i]);
    z.bytes += e.name;
    if (zip64) {
      put16(z.bytes, 1), put16(z.bytes, 24);
      put64(z.bytes, e.data.size()), put64(z.bytes, e.data.size()), put64(z.bytes, z.local[i]);
    }
  }
  if (zip64) {
    const size_t rec = z.bytes.size();
    put32(z.bytes, 0x06064b50), put64(z.bytes, 44), put16(z.bytes, 45), put16(z.bytes, 45);
    put32(z.bytes, 0), put32(z.bytes, 0), put64(z.bytes, entries.size()), put64(z.bytes, entries.size());
    put64(z.bytes, rec - z.cd_offset), put64(z.bytes, z.cd_offset);
    z.zip64_locator = z.bytes.size();
    put32(z.bytes, 0x07064b50), put32(z.bytes, 0), put64(z.bytes, rec), put32(z.bytes, 1);
    z.eocd = z.bytes.size();
    put32(z.bytes, 0x06054b50);
    put16(z.bytes, 0), put16(z.bytes, 0), put16(z.bytes, 0xffff), put16(z.bytes, 0xffff);
    put32(z.bytes, 0xffffffffu), put32(z.bytes, 0xffffffffu), put16(z.bytes, 0);
    return z;
  }
  z.eocd = z.bytes.size();
  put32(z.bytes, 0x06054b50);
  put16(z.bytes, 0), put16(z.bytes, 0), put16(z.bytes, entries.size()), put16(z.bytes, entries.size());
  put32(z.bytes, z.eocd - z.cd_offset), put32(z.bytes, z.cd_offset), put16(z.bytes, 0);
  return z;
}

// Pickle pieces, protocol 2, as torch.save writes them.
inline std::string str(const std::string& s) {
  std::string o = "X";
  put32(o, s.size());
  return o + s;
}
inline std::string i32(int32_t v) {
  std::string o = "J";
  put32(o, static_cast<uint32_t>(v));
  return o;
}
inline std::string ints(const std::vector<int32_t>& v) {
  std::string o = "(";
  for (int32_t x : v) o += i32(x);
  return o + "t";
}
struct PT {
  std::string name, storage_type = "FloatStorage", key = "0";
  int32_t numel = 6, offset = 0;
  std::vector<int32_t> shape = {2, 3}, stride = {3, 1};
};
inline std::string state_dict(const std::vector<PT>& ts) {
  std::string p = "\x80\x02}(";
  for (const PT& t : ts) {
    p += str(t.name) + "ctorch._utils\n_rebuild_tensor_v2\n(" + "(" + str("storage") + "ctorch\n" + t.storage_type +
         "\n" + str(t.key) + str("cpu") + i32(t.numel) + "tQ" + i32(t.offset) + ints(t.shape) + ints(t.stride) +
         "\x89}tR";
  }
  return p + "u.";
}
inline std::string floats(const std::vector<float>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

}  // namespace ordo::test::torch_bytes
