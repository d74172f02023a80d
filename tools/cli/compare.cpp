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
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common.hpp"
#include "compare_groups.hpp"
#include "compare_html.hpp"
#include "compare_models.hpp"
#include "compare_probes.hpp"
#include "compare_table.hpp"
#include "compare_tasks.hpp"
#include "sweep_target.hpp"
#include "usage.hpp"
#include "zoo_index.hpp"

namespace fs = std::filesystem;

namespace ordo::cli {
namespace {

using json = nlohmann::json;

struct CompareCommand : Command, SweepTarget {
  std::vector<std::string> dirs, positions;
  std::string zoo, text_file, pairs_file, json_out, html_out, backend = "onednn";
  std::string multiples_list;
  bool no_zoo = false;
  ProbeSettings ps;
  SyntheticTaskOptions synthetic;
  int threads = 1;  // the zoo's models are tiny: on a busy machine extra OpenMP threads cost ~20x

  CLI::App* add(CLI::App& app) override {
    CLI::App* c = app.add_subcommand(
        "compare", "Position schemes side by side: word order, permutation probe, length, attention by distance");
    c->add_option("-m,--model", dirs, "Extra model directory (repeatable); the zoo is included unless --no-zoo");
    c->add_option("--position", positions,
                  "Ablation (repeatable): for every -m model, also run it with this position scheme");
    c->add_option("--zoo", zoo,
                  "Zoo directory (default: ORDO_ZOO_DIR, the installed share/ordo/models/zoo, the source tree's)");
    c->add_flag("--no-zoo", no_zoo, "Only the -m models");
    c->add_option("--text", text_file,
                  "Held-out text for word-order pairs, perplexity and attention (default: ZOO/heldout.txt)")
        ->check(CLI::ExistingFile);
    c->add_option("--pairs", pairs_file,
                  "Word-order pairs, JSONL {\"original\": ..., \"swapped\": ...} (default: built from --text)")
        ->check(CLI::ExistingFile);
    c->add_option("--max-pairs", ps.max_pairs, "Pairs built from the text at most (default 200; --quick 8)");
    c->add_option("--ctx-multiples", multiples_list,
                  "Context lengths as multiples of the trained length (default 1,2,4,8,16; --quick 1,2)");
    add_alias(c, "--multiples", multiples_list, "--ctx-multiples");
    c->add_option("--ctx-base", ps.ctx_base, "Length the multiples multiply (default: each model's trained length)");
    c->add_option("--probe-tokens", ps.probe_tokens,
                  "Tokens in the permutation probe (default min(64, trained); --quick 16)");
    c->add_option("--attn-windows", ps.attn_windows,
                  "Windows of trained length for attention by distance (default 4; --quick 1)");
    c->add_option("--length-tokens", ps.length_tokens,
                  "Held-out tokens the length probe scores at most (0: all; default all, --quick 4 x the "
                  "longest context)");
    c->add_option("--tasks", ps.tasks,
                  "Probes to run, comma-separated: word-order, permutation, length, attention, synthetic (the "
                  "zoo's task models on its task suite)")
        ->capture_default_str();
    synthetic.add(c);
    c->add_flag("--quick", ps.quick, "Small settings for smoke tests");
    c->add_option("--json", json_out, "Write the results as JSON");
    c->add_option("--html", html_out, "Write a self-contained HTML report (SVG charts, the JSON embedded)");
    c->add_option("--backend", backend, "GEMM backend: openblas or onednn")
        ->capture_default_str()
        ->check(CLI::IsMember({"openblas", "onednn"}, CLI::ignore_case));
    c->add_option("-t,--threads", threads, "Threads (0: all cores; default 1, best for small models)")
        ->capture_default_str();
    return c;
  }

  void validate() const override {
    check_flag_range("-t/--threads", threads, 0, kMaxThreads);
    for (const std::string& p : positions) check_position_name("--position", p);
    if (!multiples_list.empty()) parse_int_list("--ctx-multiples", multiples_list);
    synthetic.validate();
  }

  std::vector<int64_t> parse_multiples() const {
    std::vector<int64_t> multiples;
    for (int32_t v : parse_ids(!multiples_list.empty() ? multiples_list : ps.quick ? "1,2" : "1,2,4,8,16")) {
      if (v < 1) throw Error("--multiples: " + std::to_string(v) + " is not a positive integer");
      multiples.push_back(v);
    }
    return multiples;
  }

  void check_tasks() const {
    for (std::stringstream ss(ps.tasks); ss.good();) {
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
      const fs::path heldout = fs::path(zdir.empty() ? compare_zoo_dir(zoo) : zdir) / "heldout.txt";
      // Probes that score held-out text would otherwise print n/a in every cell and exit 0.
      if (!fs::exists(heldout) && (ps.want("length") || (ps.want("word-order") && pairs_file.empty())))
        throw Error("no held-out text: give --text FILE (the default, " + heldout.string() + ", does not exist)");
      if (fs::exists(heldout)) {
        text_file = heldout.string();
        if (ps.want("word-order") || ps.want("length") || ps.want("attention") || ps.want("permutation"))
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
    return probes::default_pairs(text, static_cast<size_t>(ps.max_pairs));
  }

  json settings_json(const std::string& pairs_source, const std::vector<int64_t>& multiples) const {
    return {{"text", text_file},
            {"pairs_source", pairs_source},
            {"max_pairs", ps.max_pairs},
            {"multiples", multiples},
            {"ctx_base", ps.ctx_base},
            {"attention_windows", ps.attn_windows},
            {"length_tokens", ps.length_tokens},
            {"pair_seed", probes::kPairSeed},
            {"permutation_seed", probes::kPermutationSeed},
            {"quick", ps.quick},
            {"tasks", ps.tasks}};
  }

  // What every cell shares, from the flags: the models, the held-out text and pairs, the multiples.
  struct Grid {
    std::vector<CompareEntry> entries;
    std::string zdir, text, pairs_source;
    std::vector<probes::WordPair> pairs;
    std::vector<int64_t> multiples;
  };
  Grid grid;
  bool prepared = false;

  // check_out: the output paths too (not in a sweep cell, which writes none of them).
  const Grid& prepare(bool check_out) {
    if (prepared) return grid;
    validate();
    check_tasks();
    if (!positions.empty() && dirs.empty()) throw Error("--position makes ablations of -m models: give -m DIR");
    grid.multiples = parse_multiples();
    if (ps.max_pairs <= 0) ps.max_pairs = ps.quick ? 8 : 200;
    if (ps.attn_windows <= 0) ps.attn_windows = ps.quick ? 1 : 4;
    if (ps.length_tokens < 0) ps.length_tokens = ps.quick ? -4 : 0;  // negative: that many times the longest context
    const bool model_probes =
        ps.want("word-order") || ps.want("permutation") || ps.want("length") || ps.want("attention");
    if (model_probes) grid.entries = collect_entries(no_zoo, zoo, dirs, positions, grid.zdir);
    if (!no_zoo) grid.zdir = compare_zoo_dir(zoo);
    if (check_out) check_outputs(grid.zdir);
    grid.pairs = load_pairs(grid.zdir, grid.text, grid.pairs_source);
    prepared = true;
    return grid;
  }

  ModelOptions model_options() const {
    ModelOptions opts;
    opts.backend = parse_backend(backend);
    opts.threads = threads;
    return opts;
  }

  // One model's numbers: its description, its rows of every probe, its distance buckets.
  json entry_numbers(const CompareEntry& e, const Progress& pg) const { return entry_numbers(ps, e, pg); }

  json entry_numbers(const ProbeSettings& probes, const CompareEntry& e, const Progress& pg) const {
    json doc = {{"models", json::array()}};
    ProbeResults r;
    probe_entry(probes, e, model_options(), grid.text, grid.pairs, grid.multiples, pg, doc, r);
    json bk = json::array();
    for (const probes::DistanceBucket& b : r.buckets) bk.push_back({b.lo, b.hi});
    return {{"model", doc["models"][0]}, {"word_order", r.word_order}, {"permutation", r.permutation},
            {"length", r.length},        {"attention", r.attention},   {"buckets", bk}};
  }

  json synthetic_numbers() const {
    return {{"synthetic", synthetic_section(synthetic, grid.zdir, dirs, model_options())}};
  }

  // The zoo's task models, for the synthetic units (one per model).
  std::vector<std::string> task_labels;
  const std::vector<std::string>& synthetic_labels() {
    if (task_labels.empty()) task_labels = synthetic_model_labels(synthetic, grid.zdir, dirs);
    return task_labels;
  }

  int run() override {
    prepare(true);
    std::vector<json> results;
    Progress pg("ordo compare", grid.entries.size());
    for (size_t k = 0; k < grid.entries.size(); ++k) {
      pg.step(k + 1, "models: " + grid.entries[k].label);
      results.push_back(entry_numbers(grid.entries[k], pg));
    }
    pg.finish();
    if (ps.want("synthetic")) results.push_back(synthetic_numbers());
    render(results);
    return 0;
  }

  // A unit is one model or ablation x one probe, or one task model of the synthetic tasks: probes of
  // one model are independent, so each may run in its own cell.
  std::vector<json> sweep_units() override {
    prepare(false);
    std::vector<json> units;
    for (size_t k = 0; k < grid.entries.size(); ++k)
      for (const char* probe : kModelProbes)
        if (ps.want(probe)) units.push_back({{"probe", probe}, {"label", grid.entries[k].label}, {"entry", k}});
    if (ps.want("synthetic"))
      for (size_t t = 0; t < synthetic_labels().size(); ++t)
        units.push_back({{"probe", "synthetic"}, {"label", "synthetic " + synthetic_labels()[t]}, {"task_model", t}});
    return units;
  }

  size_t sweep_items(const json& unit) override {
    prepare(false);
    return compare_items(unit_of(unit).first, grid.pairs.size(), grid.multiples.size());
  }

  // A shard's items of its probe, checked against what the flags give now.
  void set_items(ProbeSettings& group, const std::string& probe, const json& unit) {
    const auto it = unit.find("items");
    if (it == unit.end()) return;
    const size_t n = sweep_items(unit);
    if (unit.contains("of") && unit.at("of").get<size_t>() != n)
      throw Error("unit " + unit.dump() + ": compare now finds " + std::to_string(n) + " items where the plan had " +
                  unit.at("of").dump() + ": its inputs (--text, --pairs, the zoo) changed since `ordo sweep plan` " +
                  "(plan again with --replace)");
    const ProbeSettings::Items items{true, it->at(0).get<size_t>(), it->at(1).get<size_t>()};
    if (items.lo >= items.hi || items.hi > n)
      throw Error("unit " + unit.dump() + ": items are not a part of the " + std::to_string(n) + " compare finds now");
    if (probe == "word-order") group.word_order_items = items;
    if (probe == "length") group.length_items = items;
  }

  // Consecutive units of one model (a cell of several, --per-cell) load it once; each unit keeps
  // only its own probe's rows (a second shard of a probe starts another load).
  std::vector<json> sweep_run(size_t, const std::vector<json>& units) override {
    prepare(false);
    std::vector<json> numbers;
    for (size_t u = 0; u < units.size();) {
      const auto [probe, k] = unit_of(units[u]);
      if (probe == "synthetic") {
        const size_t t = units[u].at("task_model").get<size_t>();
        if (t >= synthetic_labels().size() || units[u].value("label", "") != "synthetic " + synthetic_labels()[t])
          throw Error("unit " + units[u].dump() + " is not a task model compare finds now: the zoo or -m changed");
        json n = synthetic_model(synthetic, grid.zdir, dirs, model_options(), t, Progress());
        numbers.push_back({{"synthetic_model", std::move(n)}});
        ++u;
        continue;
      }
      ProbeSettings group = ps;
      group.tasks.clear();
      size_t end = u;
      for (; end < units.size(); ++end) {
        const auto [p, kk] = unit_of(units[end]);
        if (p == "synthetic" || kk != k || group.want(p)) break;
        group.tasks += (group.tasks.empty() ? "" : ",") + p;
        set_items(group, p, units[end]);
      }
      const json all = entry_numbers(group, grid.entries[k], Progress("ordo compare", 1));
      for (; u < end; ++u) {
        const std::string mine = probe_key(unit_of(units[u]).first);
        json n = all;
        for (const char* key : {"word_order", "permutation", "length", "attention"})
          if (key != mine) n[key] = json::array();
        if (mine != "attention") n["buckets"] = json::array();
        n["entry"] = k;
        numbers.push_back(std::move(n));
      }
    }
    return numbers;
  }

  json sweep_join(const json& unit, const std::vector<json>& shards) override {
    const std::string probe = unit.value("probe", ""), key = probe_key(probe);  // checked when it ran
    json n = shards.at(0);
    if (key.empty()) return n;
    std::vector<json> rows;
    for (const json& s : shards) rows.push_back(s.at(key));
    n[key] = join_probe_rows(probe, rows);
    return n;
  }

  // A planned unit's probe and model index, checked against what compare finds now.
  std::pair<std::string, size_t> unit_of(const json& unit) const {
    const auto text = [&unit](const char* key) {
      const auto it = unit.find(key);  // end() for a unit that is not an object
      return it != unit.end() && it->is_string() ? it->get<std::string>() : std::string();
    };
    const std::string probe = text("probe");
    if (probe == "synthetic" && ps.want("synthetic") && unit.contains("task_model") &&
        unit.at("task_model").is_number_unsigned())
      return {probe, grid.entries.size()};
    const auto entry = unit.find("entry");
    const size_t k = entry != unit.end() && entry->is_number_unsigned() ? entry->get<size_t>() : grid.entries.size();
    if (k >= grid.entries.size() || text("label") != grid.entries[k].label || probe_key(probe).empty() ||
        !ps.want(probe))
      throw Error("unit " + unit.dump() + " is not a model and probe compare now finds: the zoo, the -m list or " +
                  "--tasks changed since the plan");
    return {probe, k};
  }

  static std::string probe_key(const std::string& probe) {
    for (const char* p : kModelProbes)
      if (probe == p) return probe == "word-order" ? "word_order" : probe;
    return {};
  }

  // Each model's probe units joined back into the one row per model the one-process run has.
  void sweep_render(const std::vector<json>& results) override {
    prepare(true);
    std::vector<json> joined, task_models;
    for (const json& c : results) {
      if (c.contains("synthetic_model")) {
        task_models.push_back(c["synthetic_model"]);
        continue;
      }
      if (joined.empty() || !c.contains("entry") || !joined.back().contains("entry") ||
          joined.back()["entry"] != c["entry"]) {
        joined.push_back(c);
        continue;
      }
      json& last = joined.back();
      for (const char* key : {"word_order", "permutation", "length", "attention"})
        for (const json& row : c.at(key)) last[key].push_back(row);
      if (c.at("buckets").size() > last.at("buckets").size()) last["buckets"] = c["buckets"];
    }
    if (!task_models.empty()) joined.push_back({{"synthetic", synthetic_join(synthetic, grid.zdir, task_models)}});
    render(joined);
  }

  void sweep_outputs(const std::string& json_file, const std::string& html_file) override {
    if (!json_file.empty()) json_out = json_file;
    if (!html_file.empty()) html_out = html_file;
  }

  // The document from every cell's numbers, then the table and the files: one renderer for the
  // one-process run and `ordo sweep merge`.
  void render(const std::vector<json>& results) const {
    json doc;
    doc["tool"] = "ordo compare";
    doc["format"] = 2;  // 2: zoo kinds and seeds, per-pair scores, groups and tests
    doc["settings"] = settings_json(grid.pairs_source, grid.multiples);
    doc["models"] = json::array();
    ProbeResults r;
    for (const json& c : results) {
      if (c.contains("synthetic")) continue;
      doc["models"].push_back(c.at("model"));
      for (const char* key : {"word_order", "permutation", "length", "attention"}) {
        json& rows = std::string(key) == "word_order"    ? r.word_order
                     : std::string(key) == "permutation" ? r.permutation
                     : std::string(key) == "length"      ? r.length
                                                         : r.attention;
        for (const json& row : c.at(key)) rows.push_back(row);
      }
      std::vector<probes::DistanceBucket> bk;
      for (const json& b : c.at("buckets")) bk.push_back({b.at(0).get<int64_t>(), b.at(1).get<int64_t>()});
      if (bk.size() > r.buckets.size()) r.buckets = bk;
    }
    // Every model's bucket list is a prefix of the longest: pad the shorter ones with n/a.
    for (json& row : r.attention)
      for (const char* key : {"mean_weight", "mass"})
        while (row[key].size() < r.buckets.size()) row[key].push_back(nullptr);
    json jb = json::array();
    for (const probes::DistanceBucket& b : r.buckets) jb.push_back({{"lo", b.lo}, {"hi", b.hi}, {"label", b.label()}});
    json pair_list = json::array();
    for (const probes::WordPair& p : grid.pairs)
      pair_list.push_back({{"original", p.original}, {"swapped", p.swapped}});

    if (ps.want("word-order")) {
      doc["word_order"] = {{"pairs", pair_list}, {"results", r.word_order}};
      word_order_stats(doc["word_order"]);
    }
    if (ps.want("permutation")) doc["permutation"] = {{"results", r.permutation}};
    if (ps.want("length")) doc["length"] = {{"results", r.length}};
    if (ps.want("attention")) doc["attention"] = {{"buckets", jb}, {"results", r.attention}};
    add_seed_groups(doc);
    if (ps.want("synthetic")) doc["synthetic"] = results.back().at("synthetic");
    write_outputs(doc);
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
    print_compare_table(doc, std::cout);
    if (!json_out.empty()) write_file_atomic(json_out, doc.dump(2) + "\n");
    if (!html_out.empty()) write_file_atomic(html_out, render_compare_html(doc));
  }
};

}  // namespace

std::unique_ptr<Command> make_compare() { return std::make_unique<CompareCommand>(); }

}  // namespace ordo::cli
