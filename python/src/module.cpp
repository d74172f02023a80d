// The _ordo extension module: errors, arrays, tokenizers, the scheme registry; Model and the
// probes are bound in their own files.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>

#include "bindings.hpp"
#include "ordo/position.hpp"
#include "ordo/tokenizer.hpp"
#include "ordo/version.hpp"

namespace ordo::py {

Array make_array(Tensor t) {
  if (t.dtype != DType::F32) t = t.to_f32();
  return Array{std::move(t)};
}

pyb::object array_object(Tensor t) { return pyb::cast(make_array(std::move(t))); }

void check_ids(const std::vector<int32_t>& ids, int64_t vocab, const std::string& what, bool allow_empty) {
  if (ids.empty() && !allow_empty) throw ArgumentError(what + ": no token ids");
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || ids[i] >= vocab)
      throw ArgumentError(what + "[" + std::to_string(i) + "] = " + std::to_string(ids[i]) +
                          " is not a token id of this model (vocab " + std::to_string(vocab) + ")");
}

pyb::str utf8_text(const std::string& s) {
  PyObject* o = PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "replace");
  if (!o) throw pyb::error_already_set();
  return pyb::reinterpret_steal<pyb::str>(o);
}

namespace {

std::vector<int32_t> as_ids(const Tokenizer& t, const std::vector<int32_t>& ids) {
  check_ids(ids, t.vocab_size(), "ids", true);
  return ids;
}

void bind_array(pyb::module_& m) {
  pyb::class_<Array>(m, "Array", pyb::buffer_protocol(),
                     "A read-only float32 array; numpy.asarray(a) views it without a copy.")
      .def_buffer([](Array& a) {
        std::vector<pyb::ssize_t> shape(a.t.shape.begin(), a.t.shape.end()), strides(shape.size());
        pyb::ssize_t stride = sizeof(float);
        for (size_t i = shape.size(); i-- > 0;) {
          strides[i] = stride;
          stride *= shape[i];
        }
        return pyb::buffer_info(a.t.data, sizeof(float), pyb::format_descriptor<float>::format(),
                                static_cast<pyb::ssize_t>(shape.size()), shape, strides, /*readonly=*/true);
      })
      .def_property_readonly("shape",
                             [](const Array& a) {
                               pyb::tuple t(a.t.shape.size());
                               for (size_t i = 0; i < a.t.shape.size(); ++i) t[i] = a.t.shape[i];
                               return t;
                             })
      .def_property_readonly("dtype", [](const Array&) { return "float32"; })
      .def_property_readonly(
          "data_ptr", [](const Array& a) { return reinterpret_cast<uintptr_t>(a.t.data); },
          "Address of the first element (to check that a view shares it)")
      .def("__len__", [](const Array& a) { return a.t.shape.empty() ? 0 : a.t.shape[0]; })
      .def("tolist",
           [](const Array& a) {
             // Nested lists for those without numpy.
             const float* p = a.t.f32();
             if (a.t.ndim() == 1) return pyb::cast(std::vector<float>(p, p + a.t.numel()));
             pyb::list rows;
             const int64_t cols = a.t.numel() / std::max<int64_t>(1, a.t.shape[0]);
             for (int64_t r = 0; r < a.t.shape[0]; ++r)
               rows.append(pyb::cast(std::vector<float>(p + r * cols, p + (r + 1) * cols)));
             return pyb::object(rows);
           })
      .def("__repr__", [](const Array& a) { return "<ordo.Array float32 " + a.t.shape_str() + ">"; });
}

void bind_tokenizer(pyb::module_& m) {
  pyb::class_<Tokenizer, std::shared_ptr<Tokenizer>>(m, "Tokenizer",
                                                     "A model directory's tokenizer, without its weights.")
      .def(pyb::init([](const std::string& path) {
             pyb::gil_scoped_release nogil;
             return std::shared_ptr<Tokenizer>(load_tokenizer(path));
           }),
           pyb::arg("path"))
      .def(
          "tokenize",
          [](const Tokenizer& t, const std::string& text, bool add_special) {
            pyb::gil_scoped_release nogil;
            return t.encode(text, add_special);
          },
          pyb::arg("text"), pyb::kw_only(), pyb::arg("add_special") = true)
      .def(
          "detokenize",
          [](const Tokenizer& t, const std::vector<int32_t>& ids, bool skip_special) {
            return utf8_text(t.decode(as_ids(t, ids), skip_special));
          },
          pyb::arg("ids"), pyb::kw_only(), pyb::arg("skip_special") = false)
      .def(
          "detokenize_bytes",
          [](const Tokenizer& t, const std::vector<int32_t>& ids, bool skip_special) {
            return pyb::bytes(t.decode(as_ids(t, ids), skip_special));
          },
          pyb::arg("ids"), pyb::kw_only(), pyb::arg("skip_special") = false)
      .def("id_to_piece", [](const Tokenizer& t, int32_t id) { return utf8_text(t.id_to_piece(as_ids(t, {id})[0])); })
      .def_property_readonly("vocab_size", &Tokenizer::vocab_size)
      .def_property_readonly("bos_id", &Tokenizer::bos_id)
      .def_property_readonly("eos_id", &Tokenizer::eos_id)
      .def_property_readonly("pad_id", &Tokenizer::pad_id)
      .def_property_readonly("kind", [](const Tokenizer& t) { return std::string(t.kind()); });
}

pyb::list schemes() {
  pyb::list out;
  for (const PositionSchemeInfo* s : position_schemes()) {
    pyb::list scalings, factor_only;
    scalings.append("none");
    factor_only.append("none");
    for (const ScalingSupport& sc : s->scalings) {
      scalings.append(scaling_name(sc.type));
      if (sc.factor_only) factor_only.append(scaling_name(sc.type));
    }
    pyb::dict d;
    d["name"] = s->name;
    d["acts"] = s->acts;
    d["scalings"] = scalings;
    d["factor_only_scalings"] = factor_only;
    out.append(d);
  }
  return out;
}

}  // namespace

}  // namespace ordo::py

PYBIND11_MODULE(_ordo, m) {
  namespace py = ordo::py;
  m.doc() = "ordo: a small transformer inference engine with pluggable position schemes";
  m.attr("__version__") = ordo::version();
  // ordo::Error (a std::runtime_error) keeps its message; registered as ordo.Error.
  static pybind11::exception<ordo::Error> error(m, "Error", PyExc_RuntimeError);
  pybind11::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const ordo::Error& e) {
      error(e.what());
    }
  });
  py::bind_array(m);
  py::bind_tokenizer(m);
  m.def("schemes", &py::schemes,
        "The registered position schemes: name, where each acts, the scalings it accepts (and those "
        "that run from a factor alone).");
  py::bind_model(m);
  py::bind_probes(m);
}
