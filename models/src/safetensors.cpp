// safetensors reader (mmap + full validation) and writer.
//
// Format: 8-byte little-endian u64 N, N bytes of UTF-8 JSON header, then the data section.
// Header: {"__metadata__": {str: str}, "<name>": {"dtype": str, "shape": [int...],
// "data_offsets": [begin, end]}, ...}, offsets relative to the start of the data section.
#include "ordo/safetensors.hpp"

#include "ordo/output_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <limits>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "json_config.hpp"
#include "ordo/input.hpp"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "safetensors data is little-endian; big-endian hosts are not supported");

namespace ordo {
namespace {

// Same limit as the reference (Rust) implementation: a larger header is certainly corrupt.
constexpr uint64_t kMaxHeaderSize = 100'000'000;

struct Mapping {
  void* addr = nullptr;
  size_t size = 0;
  Mapping() = default;
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  ~Mapping() {
    if (addr) ::munmap(addr, size);
  }
};

struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

[[noreturn]] void fail(const std::string& path, const std::string& msg) { throw Error(path + ": " + msg); }

[[noreturn]] void fail_tensor(const std::string& path, const std::string& name, const std::string& msg) {
  throw Error(path + ": tensor '" + name + "': " + msg);
}

std::string errno_str() { return std::strerror(errno); }

// Short rendering of a JSON value for error messages.
std::string brief(const nlohmann::json& j) {
  std::string s = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

// Every dtype of the safetensors specification; only some are supported by ordo.
bool parse_dtype(const std::string& s, DType* out, bool* known) {
  static const char* const kUnsupported[] = {"BOOL", "U8",      "I16",     "U16",     "I32",     "U32",
                                             "I64",  "U64",     "F64",     "F8_E5M2", "F8_E4M3", "F8_E8M0",
                                             "F4",   "F6_E2M3", "F6_E3M2", "C64"};
  *known = true;
  if (s == "F32") {
    *out = DType::F32;
    return true;
  }
  if (s == "F16") {
    *out = DType::F16;
    return true;
  }
  if (s == "BF16") {
    *out = DType::BF16;
    return true;
  }
  if (s == "I8") {
    *out = DType::I8;
    return true;
  }
  for (const char* u : kUnsupported)
    if (s == u) return false;
  *known = false;
  return false;
}

std::string range_str(uint64_t b, uint64_t e) { return "[" + std::to_string(b) + ", " + std::to_string(e) + "]"; }

// Reads a non-negative JSON integer that must fit in int64 (shape entries) or uint64 (offsets).
bool json_uint(const nlohmann::json& j, uint64_t limit, uint64_t* out) {
  if (j.is_number_unsigned()) {
    uint64_t v = j.get<uint64_t>();
    if (v > limit) return false;
    *out = v;
    return true;
  }
  if (j.is_number_integer()) {  // signed: only reached for negative values
    int64_t v = j.get<int64_t>();
    if (v < 0) return false;
    *out = static_cast<uint64_t>(v);
    return static_cast<uint64_t>(v) <= limit;
  }
  return false;
}

struct Entry {
  std::string name;
  uint64_t begin = 0, end = 0;
  Tensor tensor;
};

Entry parse_entry(const std::string& path, const std::string& name, const nlohmann::json& info, uint64_t data_size) {
  if (!info.is_object()) fail_tensor(path, name, "entry must be a JSON object, got " + brief(info));
  Entry e;
  e.name = name;

  // dtype
  auto it = info.find("dtype");
  if (it == info.end()) fail_tensor(path, name, "field 'dtype' missing");
  if (!it->is_string()) fail_tensor(path, name, "field 'dtype' must be a string, got " + brief(*it));
  const std::string dtype_str = it->get<std::string>();
  bool known = false;
  if (!parse_dtype(dtype_str, &e.tensor.dtype, &known)) {
    if (known) fail_tensor(path, name, "unsupported dtype '" + dtype_str + "' (ordo supports F32, F16, BF16, I8)");
    fail_tensor(path, name, "unknown dtype '" + dtype_str + "'");
  }

  // shape: non-negative integers whose product (and byte size) does not overflow
  it = info.find("shape");
  if (it == info.end()) fail_tensor(path, name, "field 'shape' missing");
  if (!it->is_array()) fail_tensor(path, name, "field 'shape' must be an array, got " + brief(*it));
  int64_t numel = 1;
  for (size_t i = 0; i < it->size(); ++i) {
    const nlohmann::json& d = (*it)[i];
    uint64_t v = 0;
    if (!json_uint(d, static_cast<uint64_t>(std::numeric_limits<int64_t>::max()), &v))
      fail_tensor(path, name,
                  "field 'shape' entry " + std::to_string(i) + " must be a non-negative integer, got " + brief(d));
    e.tensor.shape.push_back(static_cast<int64_t>(v));
    if (__builtin_mul_overflow(numel, static_cast<int64_t>(v), &numel))
      fail_tensor(path, name, "field 'shape' " + brief(*it) + ": element count overflows");
  }
  uint64_t nbytes = 0;
  if (__builtin_mul_overflow(static_cast<uint64_t>(numel), static_cast<uint64_t>(dtype_size(e.tensor.dtype)), &nbytes))
    fail_tensor(path, name, "field 'shape' " + brief(*it) + ": byte size overflows");

  // data_offsets
  it = info.find("data_offsets");
  if (it == info.end()) fail_tensor(path, name, "field 'data_offsets' missing");
  if (!it->is_array() || it->size() != 2)
    fail_tensor(path, name, "field 'data_offsets' must be an array of two integers, got " + brief(*it));
  if (!json_uint((*it)[0], std::numeric_limits<uint64_t>::max(), &e.begin) ||
      !json_uint((*it)[1], std::numeric_limits<uint64_t>::max(), &e.end))
    fail_tensor(path, name, "field 'data_offsets' must be two non-negative integers, got " + brief(*it));
  if (e.begin > e.end) fail_tensor(path, name, "field 'data_offsets' " + range_str(e.begin, e.end) + ": begin > end");
  if (e.end > data_size)
    fail_tensor(path, name,
                "field 'data_offsets' " + range_str(e.begin, e.end) + " extends past the end of the data section (" +
                    std::to_string(data_size) + " bytes; file truncated?)");
  if (e.end - e.begin != nbytes)
    fail_tensor(path, name,
                "shape " + e.tensor.shape_str() + " x " + dtype_str + " = " + std::to_string(nbytes) +
                    " bytes, but field 'data_offsets' " + range_str(e.begin, e.end) + " spans " +
                    std::to_string(e.end - e.begin) + " bytes");
  return e;
}

// The whole file mapped read-only; a FIFO, directory or a file shorter than the length prefix is
// an Error naming it.
std::shared_ptr<Mapping> map_file(const std::string& path) {
  // O_NONBLOCK: a FIFO must be refused below, not waited on for a writer.
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (fd.fd < 0) fail(path, "cannot open: " + errno_str());
  struct stat st;
  if (::fstat(fd.fd, &st) != 0) fail(path, "cannot stat: " + errno_str());
  if (!S_ISREG(st.st_mode)) fail(path, "not a regular file");
  const uint64_t file_size = static_cast<uint64_t>(st.st_size);
  if (file_size < 8)
    fail(path, "file too short for a safetensors header (" + std::to_string(file_size) + " bytes, need at least 8)");
  auto mapping = std::make_shared<Mapping>();
  void* addr = ::mmap(nullptr, file_size, PROT_READ, MAP_PRIVATE, fd.fd, 0);
  if (addr == MAP_FAILED && errno == ENOMEM) throw out_of_memory("mapping " + path, file_size);
  if (addr == MAP_FAILED) fail(path, "mmap failed: " + errno_str());
  mapping->addr = addr;
  mapping->size = file_size;
  return mapping;
}

// The header's length from the prefix, checked against the file; the header JSON, an object
// without duplicate top-level keys (nlohmann would silently keep the last one).
nlohmann::json read_header(const std::string& path, const Mapping& m, uint64_t* header_len) {
  const unsigned char* base = static_cast<const unsigned char*>(m.addr);
  std::memcpy(header_len, base, 8);  // little-endian host (static_assert above)
  if (*header_len > kMaxHeaderSize)
    fail(path, "header length " + std::to_string(*header_len) + " is absurdly large (limit " +
                   std::to_string(kMaxHeaderSize) + " bytes); not a safetensors file?");
  if (*header_len > m.size - 8)
    fail(path, "truncated: header length " + std::to_string(*header_len) + " exceeds the " +
                   std::to_string(m.size - 8) + " bytes after the length prefix");
  std::string duplicate;
  std::set<std::string> keys;
  nlohmann::json header = parse_json_document(reinterpret_cast<const char*>(base + 8), *header_len, path,
                                              "header is not valid JSON", [&](int depth, const std::string& key) {
                                                if (depth == 1 && !keys.insert(key).second && duplicate.empty())
                                                  duplicate = key;
                                              });
  if (!header.is_object()) fail(path, "header must be a JSON object, got " + brief(header));
  if (!duplicate.empty()) fail(path, "header lists '" + duplicate + "' more than once");
  return header;
}

std::map<std::string, std::string> parse_metadata(const std::string& path, const nlohmann::json& meta) {
  if (!meta.is_object()) fail(path, "'__metadata__' must be an object of strings, got " + brief(meta));
  std::map<std::string, std::string> out;
  for (auto m = meta.begin(); m != meta.end(); ++m) {
    if (!m->is_string()) fail(path, "'__metadata__' entry '" + m.key() + "' must be a string, got " + brief(*m));
    out[m.key()] = m->get<std::string>();
  }
  return out;
}

// Non-empty byte ranges must not overlap (gaps are tolerated).
void check_no_overlap(const std::string& path, const std::vector<Entry>& entries) {
  std::vector<const Entry*> by_offset;
  for (const Entry& e : entries)
    if (e.end > e.begin) by_offset.push_back(&e);
  std::sort(by_offset.begin(), by_offset.end(), [](const Entry* a, const Entry* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
  });
  for (size_t i = 1; i < by_offset.size(); ++i) {
    const Entry& prev = *by_offset[i - 1];
    const Entry& cur = *by_offset[i];
    if (cur.begin < prev.end)
      fail(path, "tensors '" + prev.name + "' " + range_str(prev.begin, prev.end) + " and '" + cur.name + "' " +
                     range_str(cur.begin, cur.end) + " overlap");
  }
}

}  // namespace

SafeTensors SafeTensors::open(const std::string& path) {
  return with_ordo_errors(path, [&] {
    const std::shared_ptr<Mapping> mapping = map_file(path);
    uint64_t header_len = 0;
    const nlohmann::json header = read_header(path, *mapping, &header_len);
    const uint64_t data_size = mapping->size - 8 - header_len;
    const unsigned char* data = static_cast<const unsigned char*>(mapping->addr) + 8 + header_len;

    SafeTensors st_out;
    st_out.path_ = path;
    st_out.mapping_ = mapping;
    st_out.mapped_ = {static_cast<const unsigned char*>(mapping->addr), mapping->size};
    std::vector<Entry> entries;
    entries.reserve(header.size());
    for (auto it = header.begin(); it != header.end(); ++it) {
      if (it.key() == "__metadata__")
        st_out.metadata_ = parse_metadata(path, *it);
      else
        entries.push_back(parse_entry(path, it.key(), *it, data_size));
    }
    check_no_overlap(path, entries);
    for (Entry& e : entries) {
      e.tensor.data = const_cast<unsigned char*>(data + e.begin);  // read-only mapping; see header comment
      e.tensor.owner = mapping;
      st_out.tensors_.emplace(e.name, std::move(e.tensor));
    }
    return st_out;
  });
}

const Tensor& SafeTensors::get(const std::string& name) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) throw Error(path_ + ": missing tensor '" + name + "'");
  return it->second;
}

std::vector<std::string> SafeTensors::names() const {
  std::vector<std::string> out;
  out.reserve(tensors_.size());
  for (const auto& kv : tensors_) out.push_back(kv.first);
  return out;
}

void write_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) {
    nlohmann::ordered_json meta = nlohmann::ordered_json::object();
    for (const auto& kv : metadata) meta[kv.first] = kv.second;
    header["__metadata__"] = std::move(meta);
  }
  std::vector<size_t> sizes;
  sizes.reserve(tensors.size());
  std::set<std::string> seen;
  uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    if (name == "__metadata__") fail(path, "'__metadata__' cannot be used as a tensor name");
    if (!seen.insert(name).second) fail(path, "tensor '" + name + "' given more than once");
    int64_t numel = 1;
    for (int64_t d : t.shape) {
      if (d < 0) fail_tensor(path, name, "negative dimension in shape " + t.shape_str());
      if (__builtin_mul_overflow(numel, d, &numel)) fail_tensor(path, name, "shape " + t.shape_str() + " overflows");
    }
    uint64_t nbytes = 0, end = 0;
    if (__builtin_mul_overflow(static_cast<uint64_t>(numel), static_cast<uint64_t>(dtype_size(t.dtype)), &nbytes) ||
        __builtin_add_overflow(offset, nbytes, &end))
      fail_tensor(path, name, "shape " + t.shape_str() + " overflows");
    if (nbytes > 0 && t.data == nullptr) fail_tensor(path, name, "has no data");
    nlohmann::ordered_json entry = nlohmann::ordered_json::object();
    entry["dtype"] = dtype_name(t.dtype);
    entry["shape"] = t.shape;
    entry["data_offsets"] = nlohmann::ordered_json::array({offset, end});
    header[name] = std::move(entry);
    sizes.push_back(static_cast<size_t>(nbytes));
    offset = end;
  }

  std::string text;
  try {
    text = header.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::strict);
  } catch (const nlohmann::json::exception& e) {
    fail(path, std::string("cannot encode header (tensor names and metadata must be valid UTF-8): ") + e.what());
  }
  text.append((8 - text.size() % 8) % 8, ' ');
  const uint64_t header_len = text.size();
  unsigned char prefix[8];
  std::memcpy(prefix, &header_len, 8);  // little-endian host

  // Built next to the destination, then renamed: never truncates a file that may be mapped.
  OutputFile out(path);
  out.write(prefix, 8);
  out.write(text);
  for (size_t i = 0; i < tensors.size(); ++i)
    if (sizes[i]) out.write(tensors[i].second.data, sizes[i]);
  out.commit();
}

}  // namespace ordo
