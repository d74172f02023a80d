// What the files of the _ordo module share: the array type, the shared model, argument checks.
#pragma once

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <memory>
#include <shared_mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "ordo/ordo.hpp"

namespace ordo::py {

namespace pyb = pybind11;

// A read-only float32 array over an ordo::Tensor, handed to Python through the buffer protocol:
// numpy.asarray(a) (and torch.as_tensor of that) views the tensor's memory without copying it,
// and keeps this object, hence the tensor, alive.
struct Array {
  Tensor t;  // F32, contiguous row-major
};
Array make_array(Tensor t);  // converts F16/BF16 to F32 (a copy only then)
pyb::object array_object(Tensor t);

// A Model shared by the Python object and any stream still decoding from it. Calls that only read
// it (everything but the probes that retune it) hold `mu` shared; those probes hold it alone.
struct SharedModel {
  Model m;
  mutable std::shared_mutex mu;
  explicit SharedModel(Model model) : m(std::move(model)) {}
};

// A bad argument from Python: becomes ValueError (pybind11 maps std::invalid_argument to it).
struct ArgumentError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// ValueError naming `what` unless every id is in [0, vocab) and (unless allow_empty) there is one.
void check_ids(const std::vector<int32_t>& ids, int64_t vocab, const std::string& what, bool allow_empty = false);
// Bytes from the engine as a str; invalid UTF-8 becomes U+FFFD (pybind11 would raise instead).
pyb::str utf8_text(const std::string& s);

void bind_model(pyb::module_& m);
void bind_probes(pyb::module_& m);

}  // namespace ordo::py
