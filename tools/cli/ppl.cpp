// ordo ppl: perplexity against context length, for one or several long-context scaling settings.
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common.hpp"
#include "ordo/finite.hpp"
#include "ordo/output_file.hpp"
#include "ordo/perplexity.hpp"
#include "ppl_kld.hpp"
#include "ppl_settings.hpp"
#include "progress.hpp"
#include "svg_chart.hpp"
#include "sweep_target.hpp"
#include "usage.hpp"
#include "zoo_index.hpp"

namespace ordo::cli {
namespace {

struct PplCommand : Command, SweepTarget {
  ModelArgs model;
  std::string text_file, ctx_list = "128,256,512,1024", scaling_list = "model", json_out, plot_out, position;
  int64_t stride = 0, original_max = 0, batch = 4;
  double factor = 0;
  KldArgs kld;
  CLI::Option *ctx_opt = nullptr, *ctx_alias = nullptr, *kld_flag = nullptr, *chunks_opt = nullptr;
  std::vector<CLI::Option*> table_only;  // flags of the ppl table, which --kld-base's scoring does not use

  CLI::App* add(CLI::App& app) override {
    CLI::App* c = app.add_subcommand("ppl", "Perplexity at several context lengths and scaling settings");
    model.add(c, false);
    c->add_option("--text", text_file, "Text file to score")->required()->check(CLI::ExistingFile);
    ctx_opt = c->add_option("--ctx-lengths", ctx_list,
                            "Context lengths to score at, comma-separated (--kld-base: one; "
                            "default 512)")
                  ->capture_default_str();
    ctx_alias = add_alias(c, "--ctx", ctx_list, "--ctx-lengths");
    table_only.push_back(
        c->add_option("--stride", stride, "Sliding-window stride (0: non-overlapping windows)")->capture_default_str());
    table_only.push_back(c->add_option("--batch-windows", batch,
                                       "Windows scored together in one forward step (their KV caches are held at once)")
                             ->capture_default_str());
    table_only.push_back(add_alias(c, "--batch", batch, "--batch-windows"));
    table_only.push_back(
        c->add_option(
             "--scaling", scaling_list,
             "Settings to compare, comma-separated TYPE[:FACTOR]; TYPE is model (config.json's), none, linear, "
             "ntk, dynamic, yarn, llama3, longrope. Without FACTOR: --factor, else ctx / trained length "
             "(dynamic: 1). Also self-extend[:G[:W]] (default W = trained/4, G just reaching ctx) and "
             "sinks[:K[:N]] (default K = 4, N = trained - K), which keep the model's own scaling unless it is dynamic "
             "or longrope")
            ->capture_default_str());
    table_only.push_back(c->add_option("--factor", factor, "Factor for settings that give none"));
    table_only.push_back(
        c->add_option("--original-max", original_max, "Trained length the scaling starts from (default: the model's)"));
    table_only.push_back(
        c->add_option("--position", position, "Replace the model's position scheme (see ordo run --help)"));
    c->add_option("--json", json_out, "Write results as JSON");
    c->add_option("--kld-base", kld.base,
                  "KL divergence as llama-perplexity: write the reference model's log-probabilities to FILE (chunks "
                  "of ctx, second half scored), or with --kld score this model against them");
    kld_flag = c->add_flag("--kld", kld.compare,
                           "With --kld-base: PPL ratio, mean KL divergence and same-top-token % vs FILE");
    chunks_opt = c->add_option("--chunks", kld.chunks, "With --kld-base: score at most this many chunks (0: all)")
                     ->capture_default_str();
    table_only.push_back(
        c->add_option("--plot", plot_out, "Write a plot of perplexity against context length (FILE.svg or FILE.png)")
            ->check(CLI::Validator(
                [](std::string& path) {
                  return plot_format(path).empty()
                             ? "'" + path + "' names no plot format: --plot takes a file ending in .svg or .png"
                             : std::string();
                },
                "FILE.svg|FILE.png")));
    return c;
  }

  std::vector<int64_t> contexts() const {
    std::vector<int64_t> ctxs;
    for (int64_t v : parse_int_list("--ctx-lengths", ctx_list)) {
      if (v < 2) throw UsageError("--ctx-lengths: context length " + std::to_string(v) + " must be at least 2");
      if (stride > v)
        throw Error("--stride " + std::to_string(stride) + " is longer than the context length " + std::to_string(v));
      ctxs.push_back(v);
    }
    if (ctxs.empty()) throw UsageError("--ctx-lengths: no context length given");
    return ctxs;
  }

  void validate() const override {
    model.validate();
    check_kld_flags();  // first: a refused flag is named before its value is checked
    if (batch < 1) throw Error("--batch-windows must be at least 1, got " + std::to_string(batch));
    if (!position.empty()) check_position_name("--position", position);
    if (stride < 0) throw Error("--stride must be >= 0 (0: non-overlapping windows), got " + std::to_string(stride));
    if (original_max < 0) throw Error("--original-max must be >= 0, got " + std::to_string(original_max));
    if (factor != 0) check_flag_range("--factor", factor, 1e-30, kMaxScalingFactor);
    contexts();
    parse_settings(scaling_list);
    if (!plot_out.empty() && plot_format(plot_out).empty())
      throw Error("--plot: '" + plot_out + "' names no plot format: --plot takes a file ending in .svg or .png");
  }

  // "--stride": CLI11 names a hidden option (an alias) "".
  static std::string flag_name(const CLI::Option* o) { return "--" + o->get_lnames().at(0); }

  // --kld-base scores as llama-perplexity does (ppl_kld.cpp): a flag it would ignore is refused
  // rather than giving figures the user did not ask for.
  void check_kld_flags() const {
    if (kld.base.empty()) {
      for (const CLI::Option* o : {kld_flag, chunks_opt})
        if (o->count() > 0) throw UsageError(flag_name(o) + " needs --kld-base FILE");
      return;
    }
    for (const CLI::Option* o : table_only)
      if (o->count() > 0)
        throw UsageError(flag_name(o) +
                         " is not used with --kld-base (chunks of one context length, the model's own positions)");
    if (kld.compare) {
      for (const CLI::Option* o : {ctx_opt, ctx_alias, chunks_opt})
        if (o->count() > 0)
          throw UsageError(flag_name(o) + " is not used with --kld-base FILE --kld: the chunks are the base's");
    } else if (!json_out.empty()) {
      throw UsageError("--json is not used with --kld-base FILE without --kld: FILE is the output");
    }
  }

  // The position settings one row runs with: the model's, with `s`'s scaling at context ctx.
  PositionConfig position_for(const PositionConfig& base, const Setting& s, int64_t ctx, int64_t trained) const {
    PositionConfig pc = base;
    if (!position.empty()) pc.scheme = position;
    pc.extension = ContextExtension{};
    // Extension rows keep the model's own static scaling (the methods are orthogonal to it); a
    // length-dependent one (dynamic, longrope) cannot be combined with them and is left out.
    if ((s.self_extend || s.sinks) &&
        (pc.scaling.type == ScalingType::Dynamic || pc.scaling.type == ScalingType::LongRoPE))
      pc.scaling = Scaling{};
    if (s.self_extend) {
      const int64_t W = s.b > 0 ? s.b : std::max<int64_t>(1, trained / 4);
      pc.extension.neighbor = W;
      pc.extension.group = s.a > 0       ? s.a
                           : trained > W ? std::max<int64_t>(1, (ctx - W + (trained - W) - 1) / (trained - W))
                                         : 1;
      return pc;
    }
    if (s.sinks) {
      pc.extension.sinks = s.a > 0 || s.label.find(':') != std::string::npos ? s.a : 4;
      pc.extension.window = s.b > 0 ? s.b : std::max<int64_t>(1, trained - pc.extension.sinks);
      return pc;
    }
    if (s.from_model) return pc;
    Scaling sc = s.type == base.scaling.type ? base.scaling : Scaling{};
    sc.type = s.type;
    // Dynamic NTK derives its stretch from the length itself (factor 1 gives NTK at exactly
    // ctx / trained); a factor of ctx / trained on top would compound to s·ctx/trained − (s−1).
    const double automatic = s.type == ScalingType::Dynamic ? 1.0 : std::max(1.0, double(ctx) / double(trained));
    const double f = s.factor > 0 ? s.factor : factor > 0 ? factor : automatic;
    if (s.type != ScalingType::None) sc.factor = f;
    if (original_max > 0) sc.original_max_positions = original_max;
    pc.scaling = sc;
    return pc;
  }

  // One (setting, ctx) row, scored; a setting the model refuses is a row with its error.
  // With `part` (a sweep shard): its windows only, the row holding every scored token's NLL
  // ("nll") for join_rows instead of tokens and ppl.
  nlohmann::json score_row(Model& m, const std::vector<int32_t>& ids, const Setting& s, int64_t ctx,
                           const PositionConfig& pc, const Progress& pg, const PerplexityPart* part = nullptr) const {
    nlohmann::json row = {{"scaling", s.label},
                          {"type", scaling_name(pc.scaling.type)},
                          {"factor", pc.scaling.type == ScalingType::None ? 1.0 : pc.scaling.factor},
                          {"extension", pc.extension.describe()},
                          {"ctx", ctx}};
    try {
      m.engine().set_position(pc);
      std::vector<double> nlls;
      PerplexityPart p = part ? *part : PerplexityPart{};
      p.nlls = part ? &nlls : nullptr;
      PerplexityResult r = perplexity(
          m.engine(), ids, ctx, stride, [&](int64_t done, int64_t total) { pg.show("window ", done, " of ", total); },
          batch, p);
      if (part) {
        row["nll"] = nlls;
        row["windows"] = r.windows;
        return row;
      }
      row["tokens"] = r.tokens;
      row["windows"] = r.windows;
      row["ppl"] = r.ppl();
    } catch (const NonFiniteError&) {
      pg.clear();
      throw;  // the model's weights or activations, not this setting: every row would fail alike
    } catch (const Error& e) {
      row["tokens"] = 0;
      row["ppl"] = nullptr;
      row["error"] = e.what();
      pg.note("[" + s.label + "] ctx " + std::to_string(ctx) + ": " + e.what());
    }
    return row;
  }

  // One row of the table, as it is scored (one process) or from the cells' numbers (sweep merge).
  static void print_row(const nlohmann::json& row) {
    std::cout << std::left << std::setw(16) << row["scaling"].get<std::string>() << std::setw(9)
              << row["factor"].get<double>() << std::setw(24) << row["extension"].get<std::string>() << std::setw(8)
              << row["ctx"].get<int64_t>() << std::setw(10) << row["tokens"].get<int64_t>()
              << (row["ppl"].is_null() ? std::string("n/a") : std::to_string(row["ppl"].get<double>())) << "\n"
              << std::flush;
    check_stdout();
  }

  int run_kld_mode() {
    if (kld.chunks < 0) throw Error("--chunks must be >= 0, got " + std::to_string(kld.chunks));
    if (ctx_opt->count() + ctx_alias->count() > 0) {
      const std::vector<int64_t> c = contexts();
      if (c.size() != 1) throw UsageError("--kld-base takes one context length in --ctx-lengths");
      kld.ctx = c[0];
    }
    // The text (and in --kld mode the base) are inputs: an output naming one would replace it.
    if (!kld.compare) check_output_path(kld.base, {model.resolved_dir(), text_file});
    if (!json_out.empty()) check_output_path(json_out, {model.resolved_dir(), text_file, kld.base});
    kld.json_out = json_out;
    kld.text = read_input_text(text_file);  // --kld: its ids must be the base's
    const Model m = model.load(true);
    return run_kld(m, kld);
  }

  // The plot names the model and its scheme, marks the trained length, and is written in the format
  // its extension names.
  void write_plot(std::vector<Series> series, int64_t trained, const std::string& scheme) const {
    ChartOptions o = perplexity_chart(static_cast<double>(trained), dir_label(model.resolved_dir()) + " (" + scheme +
                                                                        "): perplexity vs context length");
    o.mark_label += " " + std::to_string(trained);
    for (Series& s : series) s.scheme = scheme;
    write_file_atomic(plot_out, plot_format(plot_out) == "png" ? png_line_chart(series, o) : svg_line_chart(series, o));
  }

  // The model and the text, checked against every context length before any row is scored.
  struct Loaded {
    Model m;
    std::vector<int32_t> ids;
    PositionConfig base;
    int64_t trained = 0;
  };
  Loaded load_checked(const std::vector<int64_t>& ctxs) const {
    const std::string text = read_input_text(text_file);
    Loaded l{model.load(true), {}, {}, 0};
    l.ids = l.m.encode(text, false);
    // Before any row is printed: a window longer than the text or than the model allows scores nothing.
    for (int64_t ctx : ctxs) {
      if (ctx > static_cast<int64_t>(l.ids.size()))
        throw Error("--ctx-lengths " + std::to_string(ctx) + " is longer than " + text_file + " (" +
                    std::to_string(l.ids.size()) + " tokens); give a longer text or shorter --ctx-lengths");
      l.m.engine().check_context(ctx, "--ctx-lengths " + std::to_string(ctx));
    }
    l.base = l.m.spec().position;
    l.trained = original_max > 0                            ? original_max
                : l.base.scaling.original_max_positions > 0 ? l.base.scaling.original_max_positions
                                                            : l.base.max_positions;
    std::cerr << text_file << ": " << l.ids.size() << " tokens; trained length " << l.trained << "\n";
    return l;
  }

  void check_outputs() const {
    for (const std::string* o : {&json_out, &plot_out})  // before the run: written at its end
      if (!o->empty()) check_output_path(*o, {model.resolved_dir(), text_file});
  }

  static void print_header() {
    std::cout << std::left << std::setw(16) << "scaling" << std::setw(9) << "factor" << std::setw(24) << "extension"
              << std::setw(8) << "ctx" << std::setw(10) << "tokens"
              << "ppl\n";
  }

  // --json and --plot from every row (settings-major, as scored): the one-process run and sweep merge.
  void write_reports(const nlohmann::json& results, size_t text_tokens, int64_t trained,
                     const std::string& scheme) const {
    const std::vector<int64_t> ctxs = contexts();
    const std::vector<Setting> settings = parse_settings(scaling_list);
    std::vector<Series> series;
    for (size_t i = 0; i < settings.size(); ++i) {
      Series line;
      line.name = settings[i].label;
      for (size_t j = 0; j < ctxs.size(); ++j) {
        const nlohmann::json& row = results.at(i * ctxs.size() + j);
        if (!row["ppl"].is_null()) {
          line.x.push_back(static_cast<double>(ctxs[j]));
          line.y.push_back(row["ppl"].get<double>());
        }
      }
      series.push_back(line);
    }
    if (!json_out.empty()) {
      nlohmann::json doc = {{"model", model.resolved_dir()}, {"text", text_file},
                            {"text_tokens", text_tokens},    {"stride", stride},
                            {"trained_length", trained},     {"results", results}};
      write_file_atomic(json_out, doc.dump(2) + "\n");
    }
    if (!plot_out.empty()) write_plot(series, trained, scheme);
  }

  int run() override {
    validate();
    if (!kld.base.empty()) return run_kld_mode();
    const std::vector<int64_t> ctxs = contexts();
    const std::vector<Setting> settings = parse_settings(scaling_list);
    check_outputs();
    Loaded l = load_checked(ctxs);
    nlohmann::json results = nlohmann::json::array();
    print_header();
    Progress pg("ordo ppl", settings.size() * ctxs.size());
    size_t k = 0;
    for (const Setting& s : settings) {
      for (int64_t ctx : ctxs) {
        pg.step(++k, "rows: " + s.label + " at ctx " + std::to_string(ctx));
        const nlohmann::json row = score_row(l.m, l.ids, s, ctx, position_for(l.base, s, ctx, l.trained), pg);
        print_row(row);
        results.push_back(row);
      }
    }
    pg.finish();
    l.m.engine().set_position(l.base);
    write_reports(results, l.ids.size(), l.trained, position.empty() ? l.base.scheme : position);
    return 0;
  }

  // The sweep's cells are rows of the ppl table; --kld-base is a run of its own.
  void refuse_kld_sweep() const {
    if (!kld.base.empty()) throw UsageError("sweep: ordo ppl --kld-base cannot run as a sweep (run it directly)");
  }

  // Sweep units: one per (setting, context length); a cell of several loads the model once.

  std::vector<nlohmann::json> sweep_units() override {
    refuse_kld_sweep();
    validate();
    std::vector<nlohmann::json> units;
    for (const Setting& s : parse_settings(scaling_list))
      for (int64_t ctx : contexts())
        units.push_back({{"scaling", s.label}, {"ctx", ctx}, {"label", s.label + " ctx " + std::to_string(ctx)}});
    return units;
  }

  // A row's items are its groups of --batch-windows windows (a shard of whole groups scores as the
  // one-process run does); counting them reads the text and the tokenizer, not the weights.
  size_t text_tokens = 0;
  size_t sweep_items(const nlohmann::json& unit) override {
    if (text_tokens == 0) {
      std::unique_ptr<Tokenizer> tok = load_model_tokenizer(model.resolved_dir());
      text_tokens = tok->encode(read_input_text(text_file), false).size();
    }
    return static_cast<size_t>(
        window_groups(perplexity_windows(static_cast<int64_t>(text_tokens), unit.value("ctx", int64_t(0)), stride)));
  }

  // Groups of --batch-windows windows over w windows (no overflow for any batch >= 1).
  int64_t window_groups(int64_t w) const { return w == 0 ? 0 : (w - 1) / batch + 1; }

  std::vector<nlohmann::json> sweep_run(size_t first, const std::vector<nlohmann::json>& units) override {
    refuse_kld_sweep();
    validate();
    const std::vector<int64_t> ctxs = contexts();
    const std::vector<Setting> settings = parse_settings(scaling_list);
    const auto index = [&](size_t j) { return units[j].value("unit", first + j); };
    for (size_t j = 0; j < units.size(); ++j)
      if (index(j) >= settings.size() * ctxs.size() ||
          units[j].value("ctx", int64_t(0)) != ctxs[index(j) % ctxs.size()] ||
          units[j].value("scaling", "") != settings[index(j) / ctxs.size()].label)
        throw Error("unit " + std::to_string(index(j)) + " is not the row ppl's flags give there");
    Loaded l = load_checked(ctxs);
    std::vector<nlohmann::json> numbers;
    for (size_t j = 0; j < units.size(); ++j) {
      const Setting& s = settings[index(j) / ctxs.size()];
      const int64_t ctx = ctxs[index(j) % ctxs.size()];
      PerplexityPart part;
      if (units[j].contains("items")) {
        const int64_t w = perplexity_windows(static_cast<int64_t>(l.ids.size()), ctx, stride),
                      groups = window_groups(w);
        if (units[j].contains("of") && units[j].at("of").get<int64_t>() != groups)
          throw Error("unit " + units[j].dump() + ": the text now gives " + std::to_string(groups) +
                      " groups of --batch-windows windows where the plan had " + units[j].at("of").dump() +
                      ": --text changed since `ordo sweep plan` (plan again with --replace)");
        const int64_t lo = units[j]["items"].at(0).get<int64_t>(), hi = units[j]["items"].at(1).get<int64_t>();
        if (lo < 0 || lo >= hi || hi > groups)
          throw Error("unit " + units[j].dump() + ": its items are not a part of the text's " + std::to_string(groups) +
                      " groups of windows");
        part.first = lo * batch;                    // lo < groups: below w
        part.last = hi == groups ? w : hi * batch;  // hi < groups: below w
      }
      numbers.push_back({{"row", score_row(l.m, l.ids, s, ctx, position_for(l.base, s, ctx, l.trained), Progress(),
                                           units[j].contains("items") ? &part : nullptr)},
                         {"text_tokens", l.ids.size()},
                         {"trained_length", l.trained},
                         {"scheme", position.empty() ? l.base.scheme : position}});
    }
    return numbers;
  }

  // The row from its shards' NLLs, summed in order as perplexity() sums them (or the first error).
  nlohmann::json sweep_join(const nlohmann::json&, const std::vector<nlohmann::json>& shards) override {
    nlohmann::json n = shards.at(0);
    nlohmann::json& row = n["row"];
    if (shards.size() == 1 && !row.contains("nll")) return n;
    for (const nlohmann::json& sh : shards)
      if (sh.at("row").contains("error")) return sh;
    PerplexityResult r;
    for (const nlohmann::json& sh : shards) {
      for (const nlohmann::json& x : sh.at("row").at("nll")) r.nll_sum += x.get<double>(), ++r.tokens;
      r.windows += sh.at("row").at("windows").get<int64_t>();
    }
    row.erase("nll");
    row["tokens"] = r.tokens;
    row["windows"] = r.windows;
    row["ppl"] = r.ppl();
    return n;
  }

  void sweep_render(const std::vector<nlohmann::json>& cells) override {
    refuse_kld_sweep();
    validate();
    check_outputs();
    if (cells.empty()) throw Error("ppl sweep: no cells");
    nlohmann::json results = nlohmann::json::array();
    print_header();
    for (const nlohmann::json& c : cells) {
      print_row(c.at("row"));
      results.push_back(c.at("row"));
    }
    const nlohmann::json& first = cells.front();
    write_reports(results, first.at("text_tokens").get<size_t>(), first.at("trained_length").get<int64_t>(),
                  first.at("scheme").get<std::string>());
  }

  void sweep_outputs(const std::string& json_file, const std::string& plot_file) override {
    if (!json_file.empty()) json_out = json_file;
    if (!plot_file.empty()) plot_out = plot_file;
  }
};

}  // namespace

std::unique_ptr<Command> make_ppl() { return std::make_unique<PplCommand>(); }

}  // namespace ordo::cli
