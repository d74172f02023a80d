// GgufFile: the header, metadata and tensor infos of a GGUF file, every read bounds-checked.
#include "gguf.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>

#include "ordo/input.hpp"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "GGUF is read as little-endian");

namespace ordo {

namespace {

constexpr int kMaxArrayDepth = 4;  // arrays of arrays: ggml writes none; a bound against recursion
constexpr uint32_t kMaxDims = 4;   // GGML_MAX_DIMS
// Array elements in all the metadata: each is held as a GgufValue (~100 bytes), so a large file of
// one byte array must not become a hundred times its size in memory. The largest vocabularies
// (tokens, scores, types and merges of 262k-token models) stay far below it.
constexpr uint64_t kMaxArrayElements = uint64_t{1} << 22;

struct Mapping {
  void* addr = nullptr;
  size_t size = 0;
  ~Mapping() {
    if (addr) ::munmap(addr, size);
  }
};

std::string num(uint64_t v) { return std::to_string(v); }

// A cursor over the header: every read checks that the bytes are there.
class Reader {
 public:
  uint64_t array_elements = 0;  // read so far, against kMaxArrayElements
  Reader(const unsigned char* p, size_t n, const std::string& label) : p_(p), n_(n), label_(label) {}
  size_t pos() const { return pos_; }
  size_t left() const { return n_ - pos_; }
  [[noreturn]] void fail(const std::string& what) const { throw Error(label_ + ": " + what); }
  void need(uint64_t bytes, const std::string& what) const {
    if (bytes > left())
      fail("truncated: " + what + " needs " + num(bytes) + " bytes at offset " + num(pos_) + ", the file has " +
           num(left()) + " left");
  }
  template <typename T>
  T get(const std::string& what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, p_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  std::string str(const std::string& what) {
    const uint64_t len = get<uint64_t>(what + " (its length)");
    need(len, what + " (a string of " + num(len) + " bytes)");
    std::string s(reinterpret_cast<const char*>(p_ + pos_), len);
    pos_ += len;
    return s;
  }

 private:
  const unsigned char* p_;
  size_t n_, pos_ = 0;
  const std::string& label_;
};

// The fewest bytes one value of type t takes: bounds an array's count before it is reserved.
uint64_t min_size(GgufType t) {
  switch (t) {
    case GgufType::U8:
    case GgufType::I8:
    case GgufType::Bool: return 1;
    case GgufType::U16:
    case GgufType::I16: return 2;
    case GgufType::U32:
    case GgufType::I32:
    case GgufType::F32: return 4;
    case GgufType::U64:
    case GgufType::I64:
    case GgufType::F64:
    case GgufType::String: return 8;
    case GgufType::Array: return 12;
  }
  return 1;
}

bool known_type(uint32_t t) { return t <= static_cast<uint32_t>(GgufType::F64); }

GgufValue read_value(Reader& r, GgufType t, const std::string& what, int depth);

GgufValue read_array(Reader& r, const std::string& what, int depth) {
  GgufValue v;
  v.type = GgufType::Array;
  const uint32_t et = r.get<uint32_t>(what + " (array element type)");
  if (!known_type(et)) r.fail(what + ": unknown array element type " + num(et));
  v.elem = static_cast<GgufType>(et);
  if (v.elem == GgufType::Array && depth + 1 >= kMaxArrayDepth)
    r.fail(what + ": arrays nested deeper than " + num(kMaxArrayDepth));
  const uint64_t count = r.get<uint64_t>(what + " (array count)");
  if (count > r.left() / min_size(v.elem))
    r.fail(what + ": array count " + num(count) + " of " + gguf_type_name(v.elem) + " cannot fit the " + num(r.left()) +
           " bytes left in the file");
  r.array_elements += count;
  if (r.array_elements > kMaxArrayElements)
    r.fail(what + ": the metadata arrays hold more than " + num(kMaxArrayElements) + " elements in all");
  v.items.reserve(count);
  for (uint64_t k = 0; k < count; ++k) v.items.push_back(read_value(r, v.elem, what, depth + 1));
  return v;
}

GgufValue read_value(Reader& r, GgufType t, const std::string& what, int depth) {
  GgufValue v;
  v.type = t;
  switch (t) {
    case GgufType::U8: v.i = r.get<uint8_t>(what); break;
    case GgufType::I8: v.i = r.get<int8_t>(what); break;
    case GgufType::U16: v.i = r.get<uint16_t>(what); break;
    case GgufType::I16: v.i = r.get<int16_t>(what); break;
    case GgufType::U32: v.i = r.get<uint32_t>(what); break;
    case GgufType::I32: v.i = r.get<int32_t>(what); break;
    case GgufType::I64: v.i = r.get<int64_t>(what); break;
    case GgufType::U64:
      v.u = r.get<uint64_t>(what);
      v.i = v.u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ? -1 : static_cast<int64_t>(v.u);
      break;
    case GgufType::F32: v.f = r.get<float>(what); break;
    case GgufType::F64: v.f = r.get<double>(what); break;
    case GgufType::Bool: {
      const uint8_t b = r.get<uint8_t>(what);
      if (b > 1) r.fail(what + ": bool must be 0 or 1, got " + num(b));
      v.i = b;
      break;
    }
    case GgufType::String: v.s = r.str(what); break;
    case GgufType::Array: return read_array(r, what, depth);
  }
  if (t != GgufType::U64) v.u = static_cast<uint64_t>(v.i);
  return v;
}

uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

}  // namespace

const char* gguf_type_name(GgufType t) {
  static const char* const names[] = {"u8",   "i8",     "u16",   "i16", "u32", "i32", "f32",
                                      "bool", "string", "array", "u64", "i64", "f64"};
  const auto i = static_cast<uint32_t>(t);
  return i < sizeof(names) / sizeof(names[0]) ? names[i] : "unknown";
}

bool GgufValue::is_int() const {
  return type != GgufType::Bool && type != GgufType::String && type != GgufType::Array && !is_float();
}

GgufFile GgufFile::parse(const unsigned char* data, size_t size, const std::string& label) {
  GgufFile g;
  g.path_ = label;
  g.base_ = data;
  g.size_ = size;
  Reader r(data, size, g.path_);
  r.need(4, "the magic");
  if (std::memcmp(data, "GGUF", 4) != 0) r.fail("not a GGUF file (it does not start with \"GGUF\")");
  r.get<uint32_t>("magic");
  g.version_ = r.get<uint32_t>("the version");
  if (g.version_ != 2 && g.version_ != 3)
    r.fail("GGUF version " + num(g.version_) + " is not supported (ordo reads versions 2 and 3" +
           (g.version_ == 1 ? "; version 1 files predate 64-bit counts: convert them again" : "") + ")");
  const uint64_t n_tensors = r.get<uint64_t>("the tensor count");
  const uint64_t n_kv = r.get<uint64_t>("the metadata count");
  // Each metadata entry takes at least 13 bytes, each tensor info 24: a count beyond that lies.
  if (n_kv > r.left() / 13) r.fail("metadata count " + num(n_kv) + " cannot fit the file");
  for (uint64_t k = 0; k < n_kv; ++k) {
    const std::string key = r.str("metadata entry " + num(k) + "'s key");
    const uint32_t t = r.get<uint32_t>("metadata '" + key + "' type");
    if (!known_type(t)) r.fail("metadata '" + key + "': unknown value type " + num(t));
    GgufValue v = read_value(r, static_cast<GgufType>(t), "metadata '" + key + "'", 0);
    if (!g.kv_index_.emplace(key, g.kv_.size()).second) r.fail("metadata '" + key + "' appears twice");
    g.kv_.emplace_back(key, std::move(v));
  }
  if (const GgufValue* a = g.find("general.alignment")) {
    if (a->type != GgufType::U32)
      r.fail("metadata 'general.alignment' must be u32, got " + std::string(gguf_type_name(a->type)));
    if (a->i == 0 || (a->i & (a->i - 1)) != 0)
      r.fail("metadata 'general.alignment' must be a power of two, got " + num(a->u));
    g.alignment_ = a->u;
  }
  if (n_tensors > r.left() / 24) r.fail("tensor count " + num(n_tensors) + " cannot fit the file");
  std::map<std::string, size_t> names;
  for (uint64_t k = 0; k < n_tensors; ++k) {
    GgufTensorInfo ti;
    ti.name = r.str("tensor info " + num(k) + "'s name");
    const std::string what = "tensor '" + ti.name + "'";
    const uint32_t nd = r.get<uint32_t>(what + " ndim");
    if (nd < 1 || nd > kMaxDims) r.fail(what + ": ndim " + num(nd) + " is not in [1, 4]");
    uint64_t numel = 1;
    for (uint32_t d = 0; d < nd; ++d) {
      const uint64_t n = r.get<uint64_t>(what + " dimension " + num(d));
      // At most 2^56 elements: times 8 bytes (the widest type) a byte count cannot wrap.
      if (n > (uint64_t{1} << 40) || (n && numel > (uint64_t{1} << 56) / n))
        r.fail(what + ": dimension " + num(d) + " = " + num(n) + " makes the tensor impossibly large");
      numel *= n;
      ti.dims.push_back(static_cast<int64_t>(n));
    }
    ti.type = r.get<uint32_t>(what + " type");
    if (ggml_type_name(ti.type).empty()) r.fail(what + ": unknown tensor type " + num(ti.type));
    ti.offset = r.get<uint64_t>(what + " offset");
    if (ti.offset % g.alignment_)
      r.fail(what + ": data offset " + num(ti.offset) + " is not a multiple of the alignment " + num(g.alignment_));
    const uint64_t block = ggml_type_block(ti.type);
    if (block > 1 && ti.dims[0] % static_cast<int64_t>(block) != 0)
      r.fail(what + ": dimension 0 = " + num(ti.dims[0]) + " is not a multiple of " + ggml_type_name(ti.type) +
             "'s block of " + num(block));
    ti.bytes = ggml_type_bytes(ti.type, numel);
    if (!names.emplace(ti.name, k).second) r.fail(what + " appears twice");
    g.tensors_.push_back(std::move(ti));
  }
  g.data_start_ = align_up(r.pos(), g.alignment_);
  const uint64_t blob = g.data_start_ <= size ? size - g.data_start_ : 0;
  for (const GgufTensorInfo& ti : g.tensors_)
    if (ti.offset > blob || ti.bytes > blob - ti.offset)
      r.fail("tensor '" + ti.name + "': data [" + num(ti.offset) + ", " + num(ti.offset + ti.bytes) +
             ") of the data blob runs past the end of the file (the blob has " + num(blob) + " bytes)");
  return g;
}

GgufFile GgufFile::open(const std::string& path) {
  return with_ordo_errors(path, [&] {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) throw Error(path + ": cannot open: " + std::strerror(errno));
    struct stat st;
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd);
      throw Error(path + ": not a regular file");
    }
    const size_t size = static_cast<size_t>(st.st_size);
    if (size < 24) {
      ::close(fd);
      throw Error(path + ": too short for a GGUF header (" + num(size) + " bytes, need at least 24)");
    }
    auto m = std::make_shared<Mapping>();
    void* addr = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    const int map_errno = errno;
    ::close(fd);
    if (addr == MAP_FAILED && map_errno == ENOMEM) throw out_of_memory("mapping " + path, size);
    if (addr == MAP_FAILED) throw Error(path + ": mmap failed: " + std::strerror(map_errno));
    m->addr = addr;
    m->size = size;
    GgufFile g = parse(static_cast<const unsigned char*>(addr), size, path);
    g.mapping_ = m;
    return g;
  });
}

const GgufValue* GgufFile::find(const std::string& key) const {
  auto it = kv_index_.find(key);
  return it == kv_index_.end() ? nullptr : &kv_[it->second].second;
}

const GgufValue& GgufFile::need(const std::string& key, const char* what) const {
  const GgufValue* v = find(key);
  if (!v) throw Error(path_ + ": metadata '" + key + "' missing (" + what + ")");
  return *v;
}

void GgufFile::wrong_type(const std::string& key, const GgufValue& v, const char* want) const {
  throw Error(path_ + ": metadata '" + key + "' must be " + want + ", got " + gguf_type_name(v.type));
}

std::string GgufFile::get_string(const std::string& key) const {
  const GgufValue& v = need(key, "a string");
  if (v.type != GgufType::String) wrong_type(key, v, "a string");
  return v.s;
}

std::string GgufFile::get_string(const std::string& key, const std::string& def) const {
  return find(key) ? get_string(key) : def;
}

int64_t GgufFile::get_int(const std::string& key) const {
  const GgufValue& v = need(key, "an integer");
  if (!v.is_int()) wrong_type(key, v, "an integer");
  if (v.type == GgufType::U64 && v.i < 0)
    throw Error(path_ + ": metadata '" + key + "' = " + num(v.u) + " is too large");
  return v.i;
}

int64_t GgufFile::get_int(const std::string& key, int64_t def) const { return find(key) ? get_int(key) : def; }

double GgufFile::get_float(const std::string& key, double def) const {
  const GgufValue* v = find(key);
  if (!v) return def;
  if (v->is_float()) return v->f;
  if (v->is_int()) return static_cast<double>(v->i);
  wrong_type(key, *v, "a number");
}

bool GgufFile::get_bool(const std::string& key, bool def) const {
  const GgufValue* v = find(key);
  if (!v) return def;
  if (v->type != GgufType::Bool) wrong_type(key, *v, "a bool");
  return v->i != 0;
}

const std::vector<GgufValue>& GgufFile::get_array(const std::string& key, GgufType elem) const {
  const GgufValue& v = need(key, "an array");
  if (v.type != GgufType::Array || v.elem != elem)
    throw Error(path_ + ": metadata '" + key + "' must be an array of " + gguf_type_name(elem) + ", got " +
                (v.type == GgufType::Array ? std::string("an array of ") + gguf_type_name(v.elem)
                                           : std::string(gguf_type_name(v.type))));
  return v.items;
}

bool is_gguf_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return false;
  struct stat st;
  char magic[4] = {};
  const bool ok =
      ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && ::read(fd, magic, 4) == 4 && std::memcmp(magic, "GGUF", 4) == 0;
  ::close(fd);
  return ok;
}

}  // namespace ordo
