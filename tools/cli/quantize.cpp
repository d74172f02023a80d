// ordo quantize: writes a copy of a model directory with its linear weights stored as int8
// (per-row symmetric scales), f16 or bf16; or, with --format gguf, one GGUF file (f32, f16, bf16,
// q8_0, q4_0) that llama.cpp and `ordo run -m FILE.gguf` read.
#include <iostream>

#include "common.hpp"
#include "ordo/quantize.hpp"
#include "progress.hpp"

namespace ordo::cli {
namespace {

struct QuantizeCommand : Command {
  std::string dir, out, dtype = "int8", format;
  bool replace = false;

  CLI::App* add(CLI::App& app) override {
    CLI::App* c =
        app.add_subcommand("quantize", "Write a model with int8/f16/bf16 linear weights, or a GGUF file (q8_0, q4_0)");
    c->add_option("-m,--model", dir, "Input model directory (or, with --format gguf, a GGUF file)")->required();
    c->add_option("--dtype", dtype,
                  "Storage: int8, f16, bf16 or f32 (directory: the linear weights); q8_0, q4_0 (GGUF only)")
        ->capture_default_str()
        ->check(CLI::IsMember({"f32", "f16", "bf16", "int8", "q8_0", "q4_0"}, CLI::ignore_case));
    c->add_option("--format", format,
                  "Output: 'dir' (a model directory with model.safetensors) or 'gguf' (one GGUF v3 file, llama "
                  "layout); default gguf for q8_0/q4_0, else dir")
        ->check(CLI::IsMember({"dir", "safetensors", "gguf"}, CLI::ignore_case));
    c->add_option("-o,--output", out,
                  "Output: a model directory (created, or an earlier `ordo quantize` output, replaced whole) or, "
                  "for gguf, a file (replaced atomically)")
        ->required();
    c->add_flag("--replace", replace,
                "Replace an output that holds other files, or (gguf) a file that is not a GGUF file (never the input)");
    return c;
  }

  int run() override {
    std::string d = dtype, f = format;
    for (auto& ch : d) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    for (auto& ch : f) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    const bool block = d == "q8_0" || d == "q4_0";
    if (f.empty()) f = block ? "gguf" : "dir";
    if (f != "gguf" && block)
      throw Error("--dtype " + dtype + ": q8_0 and q4_0 are GGUF block formats; use --format gguf");
    if (f == "gguf" && d == "int8")
      throw Error("--dtype int8 is ordo's own per-row format; a GGUF file takes f32, f16, bf16, q8_0 or q4_0");
    std::unique_ptr<Progress> pg;  // made at the first weight, when their number is known
    auto step = [&](size_t k, size_t total, const std::string& name) {
      if (!pg) pg = std::make_unique<Progress>("ordo quantize", total);
      pg->step(k, (f == "gguf" ? "tensors: " : "weights: ") + name);
    };
    if (f == "gguf") {
      const int n = write_gguf_model(dir, out, d, replace, step);
      if (pg) pg->finish();
      std::cout << "wrote " << out << ": GGUF v3, " << n << " tensors, " << d << "\n";
      return 0;
    }
    const int n = quantize_model(dir, out, parse_weight_dtype(dtype), replace, step);
    if (pg) pg->finish();
    std::cout << "wrote " << out << ": " << n << " linear weights stored as "
              << weight_dtype_name(parse_weight_dtype(dtype)) << "\n";
    return 0;
  }
};

}  // namespace

std::unique_ptr<Command> make_quantize() { return std::make_unique<QuantizeCommand>(); }

}  // namespace ordo::cli
