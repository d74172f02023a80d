// pytorch_model.bin -> tensors: zip_reader finds the entries, torch_pickle describes the tensors,
// this file checks every description against its storage and builds the tensors.
#include "torch_checkpoint.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "torch_pickle.hpp"
#include "zip_reader.hpp"

namespace ordo {
namespace {

std::string dims_str(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

// Copies a strided view into a new contiguous tensor, element by element (rare: transposed views).
void copy_strided(const unsigned char* base, size_t esize, const PickledTensor& pt, int64_t numel, Tensor* out) {
  *out = Tensor::zeros(pt.shape, out->dtype);
  unsigned char* dst = static_cast<unsigned char*>(out->data);
  const size_t nd = pt.shape.size();
  std::vector<int64_t> idx(nd, 0);
  for (int64_t n = 0; n < numel; ++n) {
    int64_t src = pt.offset;
    for (size_t d = 0; d < nd; ++d) src += idx[d] * pt.stride[d];
    std::memcpy(dst + static_cast<size_t>(n) * esize, base + static_cast<size_t>(src) * esize, esize);
    for (size_t d = nd; d-- > 0;) {
      if (++idx[d] < pt.shape[d]) break;
      idx[d] = 0;
    }
  }
}

// The first (up to) 9 bytes of a regular file ("" otherwise), opened without blocking, and its size.
std::string head9(const std::string& path, uint64_t* size) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return "";
  struct stat st;
  char b[9];
  const ssize_t n = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? ::read(fd, b, 9) : -1;
  ::close(fd);
  *size = n > 0 ? static_cast<uint64_t>(st.st_size) : 0;
  return n > 0 ? std::string(b, static_cast<size_t>(n)) : "";
}

// A safetensors file: a little-endian u64 header length that fits the file, then the header's
// '{'. Checked first: 1 header length in 65,536 starts with the bytes "PK".
bool looks_like_safetensors(const std::string& h, uint64_t size) {
  if (h.size() < 9 || h[8] != '{') return false;
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = n << 8 | static_cast<unsigned char>(h[static_cast<size_t>(i)]);
  return size >= 8 && n <= size - 8;
}

const std::string kLegacyHead("\x80\x02\x8a\x0a", 4);

// The archive's one <prefix>/data.pkl (prefix: the archive's top folder), after checking its
// byteorder entry, if any, says little-endian.
const ZipEntry* find_pickle(const ZipReader& z, const std::string& path, std::string* prefix) {
  const ZipEntry* pkl = nullptr;
  for (const ZipEntry& e : z.entries()) {
    const size_t slash = e.name.find('/');
    if (slash == std::string::npos || e.name.compare(slash, std::string::npos, "/data.pkl") != 0) continue;
    if (pkl) throw Error(path + ": two pickles ('" + pkl->name + "', '" + e.name + "'); a checkpoint has one");
    pkl = &e;
    *prefix = e.name.substr(0, slash);
  }
  if (!pkl) throw Error(path + ": no '<archive>/data.pkl' entry; not a PyTorch checkpoint");
  if (const ZipEntry* bo = z.find(*prefix + "/byteorder")) {
    const std::string order(reinterpret_cast<const char*>(z.data(*bo)), std::min<uint64_t>(bo->size, 16));
    if (order != "little")
      throw Error(path + ": " + bo->name + " says '" + order + "'; ordo reads little-endian checkpoints only");
  }
  return pkl;
}

}  // namespace

bool is_legacy_torch_file(const std::string& path) {
  uint64_t size = 0;
  return head9(path, &size).compare(0, 4, kLegacyHead) == 0;
}

bool is_torch_file(const std::string& path) {
  uint64_t size = 0;
  const std::string h = head9(path, &size);
  if (looks_like_safetensors(h, size)) return false;
  return h.compare(0, 2, "PK") == 0 || h.compare(0, 4, kLegacyHead) == 0;
}

TorchCheckpoint read_torch_checkpoint(const std::string& path) {
  if (is_legacy_torch_file(path))
    throw Error(path +
                ": a legacy (torch < 1.6) checkpoint; ordo reads the zip format torch.save has written "
                "since 1.6 (re-save it, or use safetensors)");
  const ZipReader z = ZipReader::open(path);
  std::string prefix;
  const ZipEntry* pkl = find_pickle(z, path, &prefix);
  const auto entries = unpickle_state_dict(z.data(*pkl), pkl->size, path + ": " + pkl->name);

  TorchCheckpoint out;
  out.mapped = z.mapped_bytes();
  out.mapping = z.mapping();
  for (const auto& [name, pt] : entries) {
    const PickledStorage& st = *pt.storage;
    const std::string where = path + ": tensor '" + name + "'";
    const std::string entry_name = prefix + "/data/" + st.key;
    const ZipEntry* e = z.find(entry_name);
    if (!e) throw Error(where + ": its storage '" + entry_name + "' is not in the archive");
    uint64_t storage_bytes = 0;
    if (__builtin_mul_overflow(static_cast<uint64_t>(st.numel), st.element_size, &storage_bytes) ||
        storage_bytes > e->size)
      throw Error(where + ": storage '" + entry_name + "' holds " + std::to_string(e->size) +
                  " bytes, fewer than the " + std::to_string(st.numel) + " " + st.type + " elements the pickle says");
    // numel and the last element the view reaches, both without overflow.
    int64_t numel = 1, last = pt.offset;
    bool overflow = false;
    for (int64_t d : pt.shape) overflow |= __builtin_mul_overflow(numel, d, &numel);
    if (numel > 0)
      for (size_t d = 0; d < pt.shape.size(); ++d) {
        int64_t span = 0;
        overflow |= __builtin_mul_overflow(pt.shape[d] - 1, pt.stride[d], &span);
        overflow |= __builtin_add_overflow(last, span, &last);
      }
    const std::string view =
        "shape " + dims_str(pt.shape) + ", stride " + dims_str(pt.stride) + ", offset " + std::to_string(pt.offset);
    if (overflow || (numel > 0 && last >= st.numel))
      throw Error(where + ": " + view + " reaches past its storage '" + entry_name + "' of " +
                  std::to_string(st.numel) + " elements");
    if (!st.supported) {
      out.unsupported[name] = where + ": unsupported dtype (torch." + st.type + "); ordo reads F32, F16 and BF16";
      continue;
    }
    Tensor t;
    t.dtype = st.dtype;
    t.shape = pt.shape;
    const unsigned char* base = z.data(*e);
    bool contiguous = true;
    int64_t expect = 1;
    for (size_t d = pt.shape.size(); d-- > 0;) {
      if (pt.shape[d] != 1 && pt.stride[d] != expect) contiguous = false;
      expect *= pt.shape[d];
    }
    if (contiguous) {
      const size_t at = numel > 0 ? static_cast<size_t>(pt.offset) * st.element_size : 0;
      t.data = const_cast<unsigned char*>(base + at);  // read-only mapping: never written through
      t.owner = z.mapping();
    } else {
      if (numel > st.numel)
        throw Error(where + ": " + view + " repeats elements (an expanded view); save it with .contiguous()");
      copy_strided(base, st.element_size, pt, numel, &t);
    }
    out.tensors.emplace(name, std::move(t));
  }
  return out;
}

}  // namespace ordo
