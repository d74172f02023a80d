// ordo inspect: what a model directory holds and how ordo will run it.
#include <filesystem>
#include <iomanip>
#include <iostream>

#include "common.hpp"
#include "ordo/weights.hpp"

namespace ordo::cli {
namespace {

struct InspectCommand : Command {
  ModelArgs model;
  bool no_tensors = false;

  CLI::App* add(CLI::App& app) override {
    CLI::App* c =
        app.add_subcommand("inspect", "Architecture, parameter count, position scheme and tensors of a model");
    model.add(c);
    c->add_flag("--no-tensors", no_tensors, "Omit the tensor list");
    return c;
  }

  void validate() const override { model.validate(); }

  int run() override {
    validate();
    const std::string dir = model.resolved_dir();
    Model m = model.load(false);
    const ModelSpec& s = m.spec();
    const PositionConfig& p = s.position;
    std::cout << "model:        " << dir << "\n"
              << "family:       " << m.family() << " (model_type " << s.architecture << ")\n"
              << "graph:        " << graph_kind_name(s.graph) << "\n"
              << "parameters:   " << s.parameter_count() << "\n"
              << "layers:       " << (s.graph == GraphKind::Decoder ? 0 : s.encoder.layers.size()) << " encoder, "
              << (s.graph == GraphKind::Encoder ? 0 : s.decoder.layers.size()) << " decoder\n"
              << "d_model:      " << s.d_model << "\n"
              << "heads:        " << s.n_heads << " (" << s.n_kv_heads << " key/value), head_dim " << s.head_dim << "\n"
              << "vocab:        " << s.vocab_size << "\n"
              << "norm:         " << (s.pre_norm ? "pre-norm" : "post-norm")
              << (s.parallel_residual ? ", parallel residual" : "") << "\n"
              << "position:     " << p.scheme;
    PositionContext ctx;
    ctx.d_model = s.d_model, ctx.n_heads = s.n_heads, ctx.head_dim = s.head_dim;
    const std::string settings = position_scheme_info(p.scheme).describe(p, ctx);
    if (!settings.empty()) std::cout << " (" << settings << ")";
    std::cout << "\n"
              << "scaling:      " << scaling_name(p.scaling.type);
    if (p.scaling.type != ScalingType::None) std::cout << " x" << p.scaling.factor;
    std::cout << "\n";
    if (p.extension.active()) std::cout << "extension:    " << p.extension.describe() << "\n";
    std::cout << "trained len:  " << p.max_positions << "\n";
    const Weights w = Weights::open_dir(dir);
    std::cout << "weights:      " << w.format() << "\n";
    for (const std::string& f : w.files()) std::cout << "  " << f << "\n";
    if (no_tensors) return 0;
    const bool sharded = w.files().size() > 1;
    std::cout << "tensors:\n";
    for (const std::string& name : w.names()) {
      const Tensor& t = w.get(name);
      std::cout << "  " << std::left << std::setw(56) << name << " " << std::setw(5) << dtype_name(t.dtype) << " "
                << t.shape_str();
      if (sharded) std::cout << "  (" << std::filesystem::path(w.file_of(name)).filename().string() << ")";
      std::cout << "\n";
    }
    // Tensors ordo does not read (an int64 buffer in a .bin), with why.
    for (const auto& [name, why] : w.unsupported())
      std::cout << "  " << std::left << std::setw(56) << name << " not read: " << why.substr(why.rfind("': ") + 3)
                << "\n";
    return 0;
  }
};

}  // namespace

std::unique_ptr<Command> make_inspect() { return std::make_unique<InspectCommand>(); }

}  // namespace ordo::cli
