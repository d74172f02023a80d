// ordo compare: position schemes side by side on four probes — word order, permutation
// equivariance, perplexity beyond the trained length, attention weight against distance.
//
// Models: the zoo unless --no-zoo (every ordo-zoo model up to two levels under the zoo directory,
// zoo_index.hpp: lm/<scheme>-s<seed>/ decoders and mlm/<scheme>-s<seed>/ masked-LM encoders, or the
// first zoo's <scheme>/ dirs; tasks/ models belong to the task probe), plus every -m DIR, plus for
// every -m DIR one ablation entry per --position NAME (the same weights with the scheme replaced).
// Word order scores masked-LM encoders by pseudo-log-likelihood, decoders by log-probability; per
// pair, per model it keeps both scores and the margin. In every section the zoo's models are also
// grouped by (kind, scheme), the seeds being replicates: mean ± 95% Student t interval over seeds
// (compare_groups.hpp; word order also over pairs, with paired t-tests between the schemes of a kind).
//
// All numbers go into one JSON document (rounded to 6 significant digits when stored); the
// terminal table, --json and --html are all rendered from it, so they agree by construction. The
// HTML embeds the document and tags every numeric cell with its JSON pointer (data-json="/...").
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common.hpp"
#include "usage.hpp"
#include "compare_groups.hpp"
#include "compare_html.hpp"
#include "compare_report.hpp"
#include "compare_tasks.hpp"
#include "ordo/perplexity.hpp"
#include "ordo/probes.hpp"
#include "ordo/stats.hpp"
#include "svg_chart.hpp"
#include "zoo_index.hpp"

namespace fs = std::filesystem;

namespace ordo::cli {
namespace {

using json = nlohmann::json;
using namespace report;

// ---- statistics over seeds and items ---------------------------------------------------------------

// word_order["groups"]: per (kind, scheme), accuracy and mean margin as mean ± 95% interval over
// seeds, and each pair's margin averaged over the seeds as mean ± interval over pairs;
// word_order["tests"]: a paired t-test on those per-pair margins between every two schemes of a kind.
void word_order_stats(json& wo) {
  const std::vector<SeedGroup> groups = seed_groups(wo["results"], {"kind", "scheme"});
  std::vector<std::vector<double>> items(groups.size());  // per group: per pair, the margin averaged over seeds
  wo["groups"] = json::array();
  for (size_t i = 0; i < groups.size(); ++i) {
    const SeedGroup& g = groups[i];
    items[i].assign(g.rows[0]->at("scores").size(), 0.0);
    for (const json* r : g.rows)
      for (size_t k = 0; k < items[i].size(); ++k) items[i][k] += r->at("scores")[k]["margin"].get<double>();
    for (double& v : items[i]) v /= static_cast<double>(g.rows.size());
    json head = g.head;
    head.update({{"pairs", items[i].size()},
                 {"accuracy", interval_json(values_at(g, json::json_pointer("/accuracy")))},
                 {"mean_margin", interval_json(values_at(g, json::json_pointer("/mean_margin")))},
                 {"item_margin", interval_json(items[i])}});
    wo["groups"].push_back(head);
  }
  wo["tests"] = json::array();
  for (size_t a = 0; a < groups.size(); ++a)
    for (size_t b = a + 1; b < groups.size(); ++b) {
      if (groups[a].head["kind"] != groups[b].head["kind"] || items[a].size() != items[b].size()) continue;
      json test = {{"kind", groups[a].head["kind"]}, {"a", groups[a].head["scheme"]}, {"b", groups[b].head["scheme"]}};
      test.update(paired_test_json(items[a], items[b]));
      wo["tests"].push_back(test);
    }
}

// ---- the command ---------------------------------------------------------------------------------

struct Entry {
  std::string label, dir, position;  // position: replacement scheme ("" keeps the model's)
  std::string kind;                  // zoo models: "lm", "mlm", ... ("" for -m models)
  int64_t seed = 0;
};

struct CompareCommand : Command {
  std::vector<std::string> dirs, positions;
  std::string zoo, text_file, pairs_file, json_out, html_out,
      backend = "onednn", tasks = "word-order,permutation,length,attention";
  std::string multiples_list;
  bool no_zoo = false, quick = false;
  SyntheticTaskOptions synthetic;
  int64_t max_pairs = 0, ctx_base = 0, probe_tokens = 0, attn_windows = 0, length_tokens = -1;
  int threads = 1;  // the zoo's models are tiny: on a busy machine extra OpenMP threads cost ~20x

  CLI::App* add(CLI::App& app) override {
    CLI::App* c = app.add_subcommand(
        "compare",
        "Position schemes side by side: word order, permutation probe, length, attention by distance");
    c->add_option("-m,--model", dirs,
                  "Extra model directory (repeatable); the zoo is included unless --no-zoo");
    c->add_option("--position", positions,
                  "Ablation (repeatable): for every -m model, also run it with this position scheme");
    c->add_option(
        "--zoo", zoo,
        "Zoo directory (default: ORDO_ZOO_DIR, the installed share/ordo/models/zoo, the source tree's)");
    c->add_flag("--no-zoo", no_zoo, "Only the -m models");
    c->add_option("--text", text_file,
                  "Held-out text for word-order pairs, perplexity and attention (default: ZOO/heldout.txt)")
        ->check(CLI::ExistingFile);
    c->add_option(
         "--pairs", pairs_file,
         "Word-order pairs, JSONL {\"original\": ..., \"swapped\": ...} (default: built from --text)")
        ->check(CLI::ExistingFile);
    c->add_option("--max-pairs", max_pairs, "Pairs built from the text at most (default 200; --quick 8)");
    c->add_option("--ctx-multiples", multiples_list,
                  "Context lengths as multiples of the trained length (default 1,2,4,8,16; --quick 1,2)");
    add_alias(c, "--multiples", multiples_list, "--ctx-multiples");
    c->add_option("--ctx-base", ctx_base,
                  "Length the multiples multiply (default: each model's trained length)");
    c->add_option("--probe-tokens", probe_tokens,
                  "Tokens in the permutation probe (default min(64, trained); --quick 16)");
    c->add_option("--attn-windows", attn_windows,
                  "Windows of trained length for attention by distance (default 4; --quick 1)");
    c->add_option("--length-tokens", length_tokens,
                  "Held-out tokens the length probe scores at most (0: all; default all, --quick 4 x the "
                  "longest context)");
    c->add_option("--tasks", tasks,
                  "Probes to run, comma-separated: word-order, permutation, length, attention, synthetic (the "
                  "zoo's task models on its task suite)")
        ->capture_default_str();
    synthetic.add(c);
    c->add_flag("--quick", quick, "Small settings for smoke tests");
    c->add_option("--json", json_out, "Write the results as JSON");
    c->add_option("--html", html_out, "Write a self-contained HTML report (SVG charts, the JSON embedded)");
    c->add_option("--backend", backend, "GEMM backend: openblas or onednn")
        ->capture_default_str()
        ->check(CLI::IsMember({"openblas", "onednn"}, CLI::ignore_case));
    c->add_option("-t,--threads", threads, "Threads (0: all cores; default 1, best for small models)")
        ->capture_default_str();
    return c;
  }

  std::string zoo_dir() const {
    if (!zoo.empty()) return zoo;
    if (const char* env = std::getenv("ORDO_ZOO_DIR")) return env;
    std::error_code ec;
    fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (!ec) {
      fs::path installed = exe.parent_path().parent_path() / "share/ordo/models/zoo";
      if (fs::exists(installed)) return installed.string();
    }
    return ORDO_ZOO_DIR;
  }

  bool want(const std::string& task) const {
    return ("," + tasks + ",").find("," + task + ",") != std::string::npos;
  }

  void validate() const override {
    check_flag_range("-t/--threads", threads, 0, kMaxThreads);
    for (const std::string& p : positions) check_position_name("--position", p);
    if (!multiples_list.empty()) parse_int_list("--ctx-multiples", multiples_list);
    synthetic.validate();
  }

  // The zoo's models (one per registered scheme that has one), then every -m DIR and its ablations.
  std::vector<Entry> collect_entries(std::string& zdir) const {
    std::vector<Entry> entries;
    if (!no_zoo) {
      zdir = zoo_dir();
      for (const ZooModel& z : discover_zoo(zdir))
        if (z.kind != "tasks")  // the synthetic-task models: the task probe's, not these
          entries.push_back({z.label, z.dir, "", z.kind, z.seed});
      if (entries.empty() && dirs.empty())
        throw Error("no zoo models under " + zdir + " (set --zoo or ORDO_ZOO_DIR, or give -m DIR with --no-zoo)");
    }
    for (const std::string& d : dirs) {
      std::string base = dir_label(d);
      const std::string name = base;
      // A zoo member given again with -m is not run twice (its ablations are still added).
      if (std::none_of(entries.begin(), entries.end(), [&](const Entry& e) { return same_directory(e.dir, d); })) {
        for (int n = 2; std::any_of(entries.begin(), entries.end(), [&](const Entry& e) { return e.label == base; });
             ++n)
          base = name + "-" + std::to_string(n);
        entries.push_back({base, d, "", "", 0});
      }
      for (const std::string& p : positions) entries.push_back({base + "[pos=" + p + "]", d, p, "", 0});
    }
    if (entries.empty()) throw Error("no models to compare");
    return entries;
  }

  // The model as one compare entry sees it.
  struct Subject {
    const Entry& entry;
    Model& model;
    std::string scheme, tokenizer_error;
    int64_t trained = 0, base = 0;
    std::vector<int32_t> heldout;
    json row(json extra = json::object()) const {
      json r = {{"model", entry.label}, {"scheme", scheme}, {"kind", entry.kind}};
      r.update(extra);
      return r;
    }
  };

  json word_order_result(const Subject& s, const std::vector<probes::WordPair>& pairs, const Progress& pg) const {
    json r = s.row();
    if (!s.model.has_tokenizer()) {
      r["error"] = "no tokenizer: " + s.tokenizer_error;
      return r;
    }
    if (pairs.empty()) {
      r["error"] = "no pairs (give --text or --pairs)";
      return r;
    }
    pg.note("[" + s.entry.label + "] word order: " + std::to_string(pairs.size()) + " pairs");
    try {
      const probes::WordOrderResult w = probes::word_order(s.model, pairs, [&](size_t done, size_t total) {
        pg.show("[", s.entry.label, "] word order ", done, "/", total);
      });
      pg.clear();
      r["method"] = w.method;
      r["pairs"] = pairs.size();
      r["wins"] = w.wins;
      r["ties"] = w.ties;
      r["accuracy"] = r6(w.accuracy);
      r["mean_margin"] = r6(w.mean_margin);
      r["scores"] = json::array();
      for (const probes::PairScore& p : w.pairs)
        r["scores"].push_back({{"original", r6(p.original)}, {"swapped", r6(p.swapped)}, {"margin", r6(p.margin)},
                               {"tie", p.tie}, {"same_tokens", p.same_tokens}});
    } catch (const Error& err) {  // e.g. a sentence longer than a learned table
      r["error"] = err.what();
      pg.note("[" + s.entry.label + "] word order: " + err.what());
    }
    return r;
  }

  json permutation_result(const Subject& s) const {
    const int64_t P = probe_tokens > 0 ? probe_tokens
                      : quick          ? std::min<int64_t>(16, s.trained)
                                       : std::min<int64_t>(64, s.trained);
    json r = s.row({{"tokens", P}});
    try {
      const probes::PermutationResult p = probes::permutation(
          s.model, probes::probe_ids(s.heldout, P, s.model.spec().vocab_size, 1), probes::kPermutationSeed);
      r["max_abs_error"] = r6(p.max_abs_error);
      r["max_abs_hidden"] = r6(p.max_abs_hidden);
      r["rel_error"] = r6(p.rel_error);
    } catch (const Error& err) {
      r["error"] = err.what();
    }
    return r;
  }

  void length_results(const Subject& s, const std::vector<int64_t>& multiples, const Progress& pg, json& out) const {
    int64_t max_ctx = 0;
    for (int64_t k : multiples)
      if (s.base * k <= static_cast<int64_t>(s.heldout.size())) max_ctx = std::max(max_ctx, s.base * k);
    std::vector<int32_t> ids = s.heldout;
    const int64_t cap = length_tokens < 0 ? -length_tokens * max_ctx : length_tokens;
    if (cap > 0 && static_cast<int64_t>(ids.size()) > cap) ids.resize(cap);
    if (max_ctx > 0) ids.resize(ids.size() / max_ctx * max_ctx);  // the same tokens at every length
    for (const probes::LengthMethod& meth : probes::length_methods(s.scheme)) {
      const std::string label = meth.name == "none" ? s.entry.label : s.entry.label + "+" + meth.name;
      json row = s.row({{"method", meth.name}, {"label", label}, {"points", json::array()}});
      pg.note("[" + s.entry.label + "] length: " + label + " on " + std::to_string(ids.size()) + " tokens");
      std::vector<probes::LengthPoint> points;
      if (s.model.has_tokenizer()) {
        points = probes::length(s.model, ids, meth, multiples, s.base, s.trained,
                                [&](const probes::LengthPoint& pt, int64_t done, int64_t total) {
                                  pg.show("[", label, "] ", pt.multiple, "x (", pt.ctx, " tokens): window ", done, "/",
                                          total);
                                });
        pg.clear();
      } else {
        for (int64_t k : multiples) {
          probes::LengthPoint pt;
          pt.multiple = k, pt.ctx = s.base * k;
          pt.factor = meth.type == ScalingType::None ? 1.0 : std::max(1.0, static_cast<double>(pt.ctx) / s.trained);
          pt.error = "no tokenizer: " + s.tokenizer_error;
          points.push_back(pt);
        }
      }
      for (const probes::LengthPoint& pt : points) {
        json j = {{"multiple", pt.multiple}, {"ctx", pt.ctx}, {"factor", r6(pt.factor)},
                  {"windows", pt.windows},   {"tokens", pt.tokens}, {"ppl", pt.error.empty() ? num_or_null(pt.ppl) : json(nullptr)}};
        if (!pt.error.empty()) j["error"] = pt.error;
        row["points"].push_back(j);
      }
      out.push_back(row);
    }
  }

  json attention_result(const Subject& s, const std::vector<probes::DistanceBucket>& bk, const Progress& pg) const {
    std::vector<std::vector<int32_t>> windows;
    for (int64_t w = 0; w < attn_windows; ++w) {
      if (static_cast<int64_t>(s.heldout.size()) >= (w + 1) * s.base)
        windows.emplace_back(s.heldout.begin() + w * s.base, s.heldout.begin() + (w + 1) * s.base);
      else
        windows.push_back(probes::probe_ids({}, s.base, s.model.spec().vocab_size, 100 + w));
    }
    pg.note("[" + s.entry.label + "] attention by distance: " + std::to_string(attn_windows) + " window(s) of " +
            std::to_string(s.base));
    json mean = json::array(), mass = json::array();
    try {
      const probes::AttentionProfile a = probes::attention_by_distance(s.model, windows, bk, [&](size_t w) {
        pg.show("[", s.entry.label, "] attention window ", w + 1, "/", attn_windows);
      });
      pg.clear();
      for (size_t b = 0; b < bk.size(); ++b) {
        mean.push_back(num_or_null(a.mean_weight[b]));
        mass.push_back(num_or_null(a.mass[b]));
      }
      return s.row({{"rows", a.rows}, {"mean_weight", mean}, {"mass", mass}});
    } catch (const Error& err) {  // e.g. --ctx-base beyond a learned table
      pg.note("[" + s.entry.label + "] attention by distance: " + err.what());
      for (size_t b = 0; b < bk.size(); ++b) mean.push_back(nullptr), mass.push_back(nullptr);
      return s.row({{"rows", 0}, {"mean_weight", mean}, {"mass", mass}, {"error", err.what()}});
    }
  }

  std::vector<int64_t> parse_multiples() const {
    std::vector<int64_t> multiples;
    for (int32_t v : parse_ids(!multiples_list.empty() ? multiples_list : quick ? "1,2" : "1,2,4,8,16")) {
      if (v < 1) throw Error("--multiples: " + std::to_string(v) + " is not a positive integer");
      multiples.push_back(v);
    }
    return multiples;
  }

  // The model of an entry; without a usable tokenizer it loads without one (probes that need text
  // then report why).
  static Model load_entry(const Entry& e, ModelOptions o, std::string& tokenizer_error) {
    o.position = e.position;
    try {
      return Model::load(e.dir, o);
    } catch (const Error& err) {
      o.load_tokenizer = false;
      Model m = Model::load(e.dir, o);
      tokenizer_error = err.what();
      return m;
    }
  }

  void check_tasks() const {
    for (std::stringstream ss(tasks); ss.good();) {
      std::string t;
      std::getline(ss, t, ',');
      if (!t.empty() && t != "word-order" && t != "permutation" && t != "length" && t != "attention" &&
          t != "synthetic")
        throw Error("--tasks: unknown probe '" + t + "' (word-order, permutation, length, attention, synthetic)");
    }
  }

  // The held-out text (--text, else the zoo's heldout.txt, with --no-zoo too: -m models are then
  // scored on the text the zoo is, rather than on nothing) and the word pairs (--pairs, else built
  // from that text); `source` says where the pairs came from.
  std::vector<probes::WordPair> load_pairs(const std::string& zdir, std::string& text, std::string& source) {
    if (text_file.empty()) {
      const fs::path heldout = fs::path(zdir.empty() ? zoo_dir() : zdir) / "heldout.txt";
      // Probes that score held-out text would otherwise print n/a in every cell and exit 0.
      if (!fs::exists(heldout) && (want("length") || (want("word-order") && pairs_file.empty())))
        throw Error("no held-out text: give --text FILE (the default, " + heldout.string() + ", does not exist)");
      if (fs::exists(heldout)) {
        text_file = heldout.string();
        if (want("word-order") || want("length") || want("attention") || want("permutation"))
          std::cerr << "held-out text: " << text_file << " (the zoo's; --text FILE for another)\n";
      }
    }
    text = text_file.empty() ? std::string() : read_input_text(text_file);
    if (!pairs_file.empty()) {
      source = pairs_file;
      return probes::parse_pairs(read_input_text(pairs_file), pairs_file);
    }
    if (text.empty()) return {};
    source = "built from " + text_file;
    return probes::default_pairs(text, static_cast<size_t>(max_pairs));
  }

  json settings_json(const std::string& pairs_source, const std::vector<int64_t>& multiples) const {
    return {{"text", text_file},
            {"pairs_source", pairs_source},
            {"max_pairs", max_pairs},
            {"multiples", multiples},
            {"ctx_base", ctx_base},
            {"attention_windows", attn_windows},
            {"length_tokens", length_tokens},
            {"pair_seed", probes::kPairSeed},
            {"permutation_seed", probes::kPermutationSeed},
            {"quick", quick},
            {"tasks", tasks}};
  }

  // Every probe's results, one row per model (length: one per model and multiple).
  struct Results {
    json word_order = json::array(), permutation = json::array(), length = json::array(), attention = json::array();
    std::vector<probes::DistanceBucket> buckets;  // the longest model's
  };

  // Loads one entry, adds its description to doc["models"] and its rows to r.
  void probe_entry(const Entry& e, const ModelOptions& opts, const std::string& text,
                   const std::vector<probes::WordPair>& pairs, const std::vector<int64_t>& multiples,
                   const Progress& pg, json& doc, Results& r) const {
    pg.note("[" + e.label + "] loading " + e.dir + (e.position.empty() ? "" : " with --position " + e.position));
    std::string tok_error;
    Model m = load_entry(e, opts, tok_error);
    const PositionConfig& pc = m.spec().position;
    const int64_t trained = pc.max_positions > 0 ? pc.max_positions : 128;
    std::vector<int32_t> heldout;
    if (m.has_tokenizer() && !text.empty()) heldout = m.encode(text, false);
    const Subject s{e, m, pc.scheme, tok_error, trained, ctx_base > 0 ? ctx_base : trained, std::move(heldout)};
    doc["models"].push_back({{"label", e.label},
                             {"dir", e.dir},
                             {"scheme", s.scheme},
                             {"position_override", e.position},
                             {"family", m.family()},
                             {"kind", e.kind},
                             {"seed", e.seed},
                             {"trained_length", s.trained},
                             {"ctx_base", s.base},
                             {"heldout_tokens", s.heldout.size()},
                             {"tokenizer", m.has_tokenizer()}});
    if (want("word-order")) r.word_order.push_back(word_order_result(s, pairs, pg));
    if (want("permutation")) r.permutation.push_back(permutation_result(s));
    if (want("length")) {
      if (m.spec().graph == GraphKind::Encoder)  // perplexity needs next-token probabilities
        pg.note("[" + e.label + "] length: skipped (an encoder has no causal perplexity)");
      else
        length_results(s, multiples, pg, r.length);
    }
    if (want("attention")) {
      const std::vector<probes::DistanceBucket> bk = probes::distance_buckets(s.base - 1);
      if (bk.size() > r.buckets.size()) r.buckets = bk;
      r.attention.push_back(attention_result(s, bk, pg));
    }
  }

  int run() override {
    validate();
    check_tasks();
    if (!positions.empty() && dirs.empty()) throw Error("--position makes ablations of -m models: give -m DIR");
    const std::vector<int64_t> multiples = parse_multiples();
    if (max_pairs <= 0) max_pairs = quick ? 8 : 200;
    if (attn_windows <= 0) attn_windows = quick ? 1 : 4;
    if (length_tokens < 0) length_tokens = quick ? -4 : 0;  // negative: that many times the longest context

    std::string zdir;
    const bool model_probes = want("word-order") || want("permutation") || want("length") || want("attention");
    const std::vector<Entry> entries = model_probes ? collect_entries(zdir) : std::vector<Entry>{};
    if (!no_zoo) zdir = zoo_dir();
    check_outputs(zdir);
    std::string text, pairs_source;
    const std::vector<probes::WordPair> pairs = load_pairs(zdir, text, pairs_source);

    json doc;
    doc["tool"] = "ordo compare";
    doc["format"] = 2;  // 2: zoo kinds and seeds, per-pair scores, groups and tests
    doc["settings"] = settings_json(pairs_source, multiples);
    doc["models"] = json::array();
    Results r;
    ModelOptions opts;
    opts.backend = parse_backend(backend);
    opts.threads = threads;
    Progress pg("ordo compare", entries.size());
    for (size_t k = 0; k < entries.size(); ++k) {
      pg.step(k + 1, "models: " + entries[k].label);
      probe_entry(entries[k], opts, text, pairs, multiples, pg, doc, r);
    }
    pg.finish();
    // Every model's bucket list is a prefix of the longest: pad the shorter ones with n/a.
    for (json& row : r.attention)
      for (const char* key : {"mean_weight", "mass"})
        while (row[key].size() < r.buckets.size()) row[key].push_back(nullptr);
    json jb = json::array();
    for (const probes::DistanceBucket& b : r.buckets) jb.push_back({{"lo", b.lo}, {"hi", b.hi}, {"label", b.label()}});
    json pair_list = json::array();
    for (const probes::WordPair& p : pairs) pair_list.push_back({{"original", p.original}, {"swapped", p.swapped}});

    if (want("word-order")) {
      doc["word_order"] = {{"pairs", pair_list}, {"results", r.word_order}};
      word_order_stats(doc["word_order"]);
    }
    if (want("permutation")) doc["permutation"] = {{"results", r.permutation}};
    if (want("length")) doc["length"] = {{"results", r.length}};
    if (want("attention")) doc["attention"] = {{"buckets", jb}, {"results", r.attention}};
    add_seed_groups(doc);
    if (want("synthetic")) doc["synthetic"] = synthetic_section(synthetic, zdir, dirs, opts);
    write_outputs(doc);
    return 0;
  }

  // Before the run (outputs are written at its end): no output inside a -m or zoo model (the zoo's
  // root, which holds reports, is not a model).
  void check_outputs(const std::string& zdir) const {
    if (json_out.empty() && html_out.empty()) return;
    std::vector<std::string> inputs = dirs;
    try {
      if (!zdir.empty())
        for (const ZooModel& z : discover_zoo(zdir)) inputs.push_back(z.dir);
    } catch (const Error&) {  // an unreadable zoo is reported by the run itself
    }
    for (const std::string* o : {&json_out, &html_out})
      if (!o->empty()) check_output_path(*o, inputs);
  }

  void write_outputs(const json& doc) const {
    print_table(doc);
    if (!json_out.empty()) write_file_atomic(json_out, doc.dump(2) + "\n");
    if (!html_out.empty()) write_file_atomic(html_out, render_compare_html(doc));
  }

  // Per (kind, scheme): mean ± 95% interval over seeds and items; paired tests between schemes.
  static void print_word_order_groups(const json& wo, std::ostream& o) {
    if (wo["groups"].empty()) return;
    o << "\n== word order by kind and scheme: mean ± 95% interval (Student t) over seeds; item margin over pairs\n"
      << column("kind", 6) << column("scheme", 12) << column("seeds", 6) << column("accuracy", 22)
      << column("mean margin", 24) << column("item margin", 24) << "\n";
    for (const json& g : wo["groups"])
      o << column(g["kind"], 6) << column(g["scheme"], 12) << column(g["seeds"], 6)
        << column(pm(g["accuracy"]), 22) << column(pm(g["mean_margin"]), 24) << column(pm(g["item_margin"]), 24)
        << "\n";
    if (wo["tests"].empty()) return;
    o << "\n== word order, paired t-tests on per-pair margins averaged over seeds (two-sided)\n"
      << column("kind", 6) << column("a", 12) << column("b", 12) << column("pairs", 6) << column("mean a-b", 12)
      << column("t", 12) << column("p", 12) << "\n";
    for (const json& t : wo["tests"])
      o << column(t["kind"], 6) << column(t["a"], 12) << column(t["b"], 12) << column(t["n"], 6)
        << column(t["mean_diff"], 12) << column(t["t"], 12) << column(t["p"], 12) << "\n";
  }

  // Every pair, then per model: both scores and the margin ("tie" within float rounding).
  static void print_word_order_pairs(const json& wo, int lw, std::ostream& o) {
    o << "\n== word order per pair: score(original), score(swapped), margin (nats; PLL for masked-LM "
         "encoders, log-prob otherwise)\n";
    for (size_t i = 0; i < wo["pairs"].size(); ++i) {
      o << "#" << i + 1 << "  " << wo["pairs"][i]["original"].get<std::string>() << "\n    "
        << wo["pairs"][i]["swapped"].get<std::string>() << "\n";
      for (const json& r : wo["results"]) {
        if (!r.contains("scores")) continue;
        const json& sc = r["scores"][i];
        o << "    " << column(r["model"], lw) << column(sc["original"], 12) << column(sc["swapped"], 12)
          << column(sc["margin"], 12) << (sc["tie"].get<bool>() ? "tie" : "") << "\n";
      }
    }
  }

  static void print_table(const json& doc) {
    std::ostream& o = std::cout;
    int lw = 12, rw = 12;  // label column widths: models, length rows
    for (const json& mm : doc["models"])
      lw = std::max(lw, static_cast<int>(mm["label"].get<std::string>().size()) + 2);
    if (doc.contains("length"))
      for (const json& r : doc["length"]["results"])
        rw = std::max(rw, static_cast<int>(r["label"].get<std::string>().size()) + 2);
    if (doc.contains("word_order")) {
      o << "== word order: prefers the original over two words swapped (" << doc["word_order"]["pairs"].size()
        << " pairs)\n"
        << column("model", lw) << column("scheme", 12) << column("score", 8) << column("accuracy", 10)
        << column("margin", 12) << column("ties", 6) << "\n";
      for (const json& r : doc["word_order"]["results"])
        o << column(r["model"], lw) << column(r["scheme"], 12) << column(r.value("method", json()), 8)
          << column(r.value("accuracy", json()), 10) << column(r.value("mean_margin", json()), 12)
          << column(r.value("ties", json()), 6) << (r.contains("error") ? r["error"].get<std::string>() : "")
          << "\n";
      print_word_order_groups(doc["word_order"], o);
      print_word_order_pairs(doc["word_order"], lw, o);
    }
    if (doc.contains("permutation")) {
      o << "\n== permutation probe: bidirectional, max |h(perm x) - perm h(x)|\n"
        << column("model", lw) << column("scheme", 12) << column("tokens", 8) << column("max_abs", 14)
        << column("relative", 14) << "\n";
      for (const json& r : doc["permutation"]["results"])
        o << column(r["model"], lw) << column(r["scheme"], 12) << column(r["tokens"], 8)
          << column(r.value("max_abs_error", json()), 14) << column(r.value("rel_error", json()), 14)
          << (r.contains("error") ? r["error"].get<std::string>() : "") << "\n";
      print_seed_groups(doc, "permutation", o);
    }
    if (doc.contains("length")) {
      o << "\n== length: perplexity at multiples of the trained length\n" << column("row", rw);
      for (const json& k : doc["settings"]["multiples"]) o << column(k.dump() + "x", 11);
      o << "\n";
      for (const json& r : doc["length"]["results"]) {
        o << column(r["label"], rw);
        for (const json& p : r["points"]) o << column(p["ppl"], 11);
        o << "\n";
      }
      print_seed_groups(doc, "length", o);
    }
    if (doc.contains("attention")) {
      o << "\n== attention: mean weight by query-key distance\n" << column("model", lw);
      for (const json& b : doc["attention"]["buckets"]) o << column(b["label"], 11);
      o << "\n";
      for (const json& r : doc["attention"]["results"]) {
        o << column(r["model"], lw);
        for (const json& v : r["mean_weight"]) o << column(v, 11);
        o << "\n";
      }
      print_seed_groups(doc, "attention", o);
    }
    if (doc.contains("synthetic")) print_synthetic(doc, o);
    o << std::flush;
  }
};

}  // namespace

std::unique_ptr<Command> make_compare() { return std::make_unique<CompareCommand>(); }

}  // namespace ordo::cli
