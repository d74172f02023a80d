// ordo quantize: writes a copy of a model directory with its linear weights stored as int8
// (per-row symmetric scales), f16 or bf16; `ordo run -m OUTDIR` etc. load it directly.
#include <iostream>

#include "common.hpp"
#include "ordo/quantize.hpp"
#include "progress.hpp"

namespace ordo::cli {
namespace {

struct QuantizeCommand : Command {
  std::string dir, out, dtype = "int8";
  bool replace = false;

  CLI::App* add(CLI::App& app) override {
    CLI::App* c = app.add_subcommand("quantize", "Write a model directory with int8/f16/bf16 linear weights");
    c->add_option("-m,--model", dir, "Input model directory")->required();
    c->add_option("--dtype", dtype, "Storage of the linear weights: int8, f16, bf16 (or f32)")
        ->capture_default_str()
        ->check(CLI::IsMember({"f32", "f16", "bf16", "int8"}, CLI::ignore_case));
    c->add_option("-o,--output", out,
                  "Output model directory: created, or an earlier `ordo quantize` output, replaced whole")
        ->required();
    c->add_flag("--replace", replace,
                "Replace an output directory that holds other files (its whole contents are removed; never the input)");
    return c;
  }

  int run() override {
    std::unique_ptr<Progress> pg;  // made at the first weight, when their number is known
    const int n = quantize_model(dir, out, parse_weight_dtype(dtype), replace,
                                 [&](size_t k, size_t total, const std::string& name) {
                                   if (!pg) pg = std::make_unique<Progress>("ordo quantize", total);
                                   pg->step(k, "weights: " + name);
                                 });
    if (pg) pg->finish();
    std::cout << "wrote " << out << ": " << n << " linear weights stored as "
              << weight_dtype_name(parse_weight_dtype(dtype)) << "\n";
    return 0;
  }
};

}  // namespace

std::unique_ptr<Command> make_quantize() { return std::make_unique<QuantizeCommand>(); }

}  // namespace ordo::cli
