// Private to models/: lets the resident pages of tensors borrowed from a weights file's mapping go.
//
// A weights file (safetensors or a PyTorch zip) is mapped read-only and private (PROT_READ,
// MAP_PRIVATE): its pages are the file's, never written, so dropping them (MADV_DONTNEED) only
// takes them out of the resident set and a later read faults them back in from the file. Once a weight has been
// converted or packed the engine no longer reads its bytes there; without this, reading them to make the copy would
// leave the whole file resident beside the copy and the model held twice.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "ordo/weights.hpp"

namespace ordo {

class MappedPages {
 public:
  // Remembers the mapping of every file of `weights` (not the tensors copied out of a file).
  void add(const Weights& weights);
  // Drops the pages of [t.data, t.data + t.nbytes()) when that range lies in a span added; does
  // nothing for any other tensor (heap memory must keep its contents).
  void release(const Tensor& t) const;
  // Drops every page of every span (the header's first page too).
  void release_all() const;

 private:
  std::vector<std::pair<uintptr_t, uintptr_t>> spans_;  // [begin, end) addresses
  std::vector<std::shared_ptr<void>> keep_;             // the mappings, alive while their spans are
};

}  // namespace ordo
