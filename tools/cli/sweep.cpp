// ordo sweep: a compare or ppl grid as cells in a directory: plan them, run them (one, or every
// missing one N at a time, or as a Slurm job array), see their state, merge them into the report
// the one-process command writes (its own renderer, sweep_target.hpp).
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <iostream>

#include "common.hpp"
#include "sweep_dir.hpp"
#include "sweep_jobs.hpp"
#include "sweep_slurm.hpp"
#include "sweep_target.hpp"
#include "sweep_temp.hpp"
#include "usage.hpp"

namespace fs = std::filesystem;

namespace ordo::cli {

ParsedTarget parse_sweep_target(const std::string& command, const std::vector<std::string>& args) {
  if (command != "compare" && command != "ppl")
    throw UsageError("sweep: '" + command + "' cannot run as a sweep (compare or ppl)");
  ParsedTarget p;
  p.cli = std::make_unique<CliApp>();
  std::vector<const char*> argv = {"ordo", command.c_str()};
  for (const std::string& a : args) argv.push_back(a.c_str());
  Command* c = nullptr;
  try {
    c = p.cli->parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::ParseError& e) {
    throw UsageError("sweep: ordo " + command + ": " + (e.what()[0] ? std::string(e.what()) : e.get_name()));
  }
  p.target = dynamic_cast<SweepTarget*>(c);
  if (!p.target) throw UsageError("sweep: ordo " + command + " did not parse");
  c->validate();
  return p;
}

namespace {

using json = nlohmann::json;

// The manifest's target, in the directory the plan was made in (relative paths in its arguments).
ParsedTarget open_target(const sweep::Manifest& m) {
  if (::chdir(m.cwd.c_str()) != 0) throw Error("sweep: the plan's directory " + m.cwd + " is gone");
  return parse_sweep_target(m.command, m.args);
}

std::string absolute_or_empty(const std::string& p) { return p.empty() ? p : fs::absolute(p).string(); }

struct SweepCommand : Command {
  CLI::App *sweep_app = nullptr, *plan = nullptr, *run_ = nullptr, *merge = nullptr, *status = nullptr,
           *slurm = nullptr;
  std::string dir, target;
  bool replace = false, force = false;
  long long cell = -1;
  int jobs = 1;
  long long per_cell = 1, shards = 1;
  std::string json_out, report_out;
  sweep::SlurmOptions so;
  bool dry_run = false;

  CLI::App* add(CLI::App& app) override {
    CLI::App* c = sweep_app =
        app.add_subcommand("sweep", "A compare or ppl grid as cells: plan, run (locally or on Slurm), merge");
    c->require_subcommand(1);
    c->allow_extras();  // sbatch's options after `ordo sweep slurm DIR`'s own (CLI11 hands them up here)
    plan = c->add_subcommand("plan", "Write DIR/manifest.jsonl: ordo sweep plan DIR compare|ppl ARGS...");
    plan->add_option("dir", dir, "Sweep directory")->required();
    plan->add_option("command", target, "compare or ppl")->required();
    plan->add_option("--per-cell", per_cell,
                     "Units of work (or shards of them) per cell (compare: a model's probe, ppl: setting x length "
                     "rows), run in one process (default 1)");
    plan->add_option("--shards", shards,
                     "Split each unit's items (a probe's pairs, a ppl row's windows) into up to S cells of "
                     "contiguous items, merged before any statistic (default 1)");
    plan->add_flag("--replace", replace, "Replace DIR's plan of other arguments (its results are removed)");
    plan->prefix_command();
    run_ = c->add_subcommand("run", "Run one cell (--cell I) or every missing cell, --jobs N at a time");
    run_->add_option("dir", dir, "Sweep directory")->required();
    run_->add_option("--cell", cell, "Cell index (0-based, as in the manifest)");
    run_->add_option("--jobs", jobs, "Cells at once, each its own process (default 1)");
    run_->add_flag("--force", force, "Run the cell even when its result is done");
    merge = c->add_subcommand("merge", "The command's table, --json and report from every cell's result");
    merge->add_option("dir", dir, "Sweep directory")->required();
    merge->add_option("--json", json_out, "Write the JSON here (default: the planned --json)");
    merge->add_option("--html,--plot", report_out, "Write compare's HTML / ppl's plot here (default: as planned)");
    status = c->add_subcommand("status", "Cells done, failed, corrupt and missing");
    status->add_option("dir", dir, "Sweep directory")->required();
    slurm = c->add_subcommand("slurm", "Write and submit a Slurm job array of the cells not done");
    slurm->add_option("dir", dir, "Sweep directory")->required();
    slurm->add_option("--max-parallel", so.max_parallel, "Array tasks running at once (%K; 0: no limit)");
    slurm->add_option("--max-array-size", so.max_array_size, "The cluster's MaxArraySize (default 1001)")
        ->capture_default_str();
    slurm->add_flag("--dry-run,--script-only", dry_run, "Write the scripts, do not submit them");
    slurm->prefix_command();  // everything after ordo's own flags (and an optional --) goes to sbatch
    return c;
  }

  void validate() const override {
    if (plan && plan->parsed() && (per_cell < 1 || per_cell > 1000000))
      throw UsageError("--per-cell must be in [1, 1000000], got " + std::to_string(per_cell));
    if (plan && plan->parsed() && (shards < 1 || shards > 1000000))
      throw UsageError("--shards must be in [1, 1000000], got " + std::to_string(shards));
    if (run_ && run_->parsed() && (jobs < 1 || jobs > 4096))
      throw UsageError("--jobs must be in [1, 4096], got " + std::to_string(jobs));
  }

  // --shards S: unit u becomes min(S, its items) shards, each {"unit": u, "shard": k, "shards": n,
  // "items": [lo, hi), "of": items} over contiguous items (a unit of one item stays whole, with
  // "unit": u). "of" lets a cell refuse inputs that give another count than at planning.
  std::vector<json> shard_units(SweepTarget& t, const std::vector<json>& units) const {
    if (shards == 1) return units;
    std::vector<json> out;
    for (size_t u = 0; u < units.size(); ++u) {
      const size_t items = std::max<size_t>(1, t.sweep_items(units[u]));
      const size_t n = std::min(items, static_cast<size_t>(shards));
      for (size_t k = 0; k < n; ++k) {
        json s = units[u];
        s["unit"] = u;
        if (n > 1) {
          s["shard"] = k, s["shards"] = n, s["items"] = {k * items / n, (k + 1) * items / n}, s["of"] = items;
        }
        out.push_back(std::move(s));
      }
    }
    return out;
  }

  // A unit's label, with its shard ("lm/rope-s1 [2/3]") when it has one.
  static std::string unit_label(const json& unit) {
    std::string l = unit.value("label", "");
    if (unit.contains("shards"))
      l += " [" + std::to_string(unit.at("shard").get<size_t>() + 1) + "/" + unit.at("shards").dump() + "]";
    return l;
  }

  int do_plan() {
    ParsedTarget p = parse_sweep_target(target, plan->remaining());
    sweep::Manifest m;
    m.dir = dir;
    m.command = target;
    m.args = plan->remaining();
    m.cwd = fs::current_path().string();
    const std::vector<json> units = shard_units(*p.target, p.target->sweep_units());
    if (units.empty()) throw Error("sweep plan: ordo " + target + " has no cells with these arguments");
    for (size_t u = 0; u < units.size(); u += static_cast<size_t>(per_cell)) {
      const size_t end = std::min(units.size(), u + static_cast<size_t>(per_cell));
      json cell = {{"first", u}, {"units", json(std::vector<json>(units.begin() + u, units.begin() + end))}};
      cell["label"] = unit_label(units[u]) + (end - u > 1 ? " .. " + unit_label(units[end - 1]) : "");
      m.cells.push_back(cell);
    }
    sweep::write_manifest(m, replace);
    std::cout << "planned " << m.cells.size() << " cells in " << m.dir << "\n";
    return 0;
  }

  // The cell's temporaries that killed runs left (sweep_temp.hpp: never a live writer's).
  static void clean_temps(const sweep::Manifest& m, size_t c) {
    sweep::remove_stale_temps(m.dir + "/cells", std::to_string(c) + ".");
  }

  int run_one(const sweep::Manifest& m, size_t c) {
    clean_temps(m, c);
    std::string why;
    const sweep::CellState st = sweep::cell_state(m, c, &why);
    if (st == sweep::CellState::Done && !force) {
      std::cerr << "ordo sweep: cell " << c << " is done (its result verifies): skipped\n";
      return 0;
    }
    if (st == sweep::CellState::Corrupt) std::cerr << "ordo sweep: rerunning cell " << c << ": " << why << "\n";
    try {
      ParsedTarget p = open_target(m);
      const json& cell = m.cells[c];
      std::vector<json> numbers;
      try {
        numbers = p.target->sweep_run(cell.at("first").get<size_t>(), cell.at("units"));
      } catch (const json::exception& e) {  // a hand-edited unit of the wrong shape
        throw Error("sweep run: " + m.dir + "/manifest.jsonl cell " + std::to_string(c) + ": " + e.what());
      }
      sweep::write_result(m, c, numbers);
    } catch (const std::exception& e) {
      sweep::write_failure(m, c, e.what());
      throw;
    }
    return 0;
  }

  int do_run() {
    const sweep::Manifest m = sweep::read_manifest(dir);
    if (cell >= 0 || run_->count("--cell")) return run_one(m, sweep::cell_index(m, cell));
    std::vector<size_t> todo;
    sweep::remove_stale_temps(m.dir + "/cells");
    for (size_t c = 0; c < m.cells.size(); ++c)
      if (force || sweep::cell_state(m, c) != sweep::CellState::Done) todo.push_back(c);
    std::cerr << "ordo sweep: " << todo.size() << " of " << m.cells.size() << " cells to run, " << jobs
              << " at a time\n";
    const std::vector<size_t> failed = sweep::run_cells(m, todo, jobs, force);
    if (!failed.empty())
      throw Error("sweep run: " + std::to_string(failed.size()) + " cells failed: " + sweep::id_ranges(failed) +
                  " (logs in " + m.dir + "/logs)");
    return 0;
  }

  // Each unit's shards (consecutive in the manifest) joined into the unit's numbers, in unit order.
  static std::vector<json> join_shards(const sweep::Manifest& m, SweepTarget& t, std::vector<json> results) {
    std::vector<json> planned, joined;
    for (const json& c : m.cells)
      for (const json& u : c.at("units")) planned.push_back(u);
    for (size_t i = 0; i < planned.size();) {
      if (!planned[i].contains("unit")) {
        joined.push_back(std::move(results[i++]));
        continue;
      }
      const json unit = planned[i].at("unit");
      try {
        const size_t n = planned[i].value("shards", size_t(1));
        std::vector<json> parts;
        for (size_t k = 0;
             k < n && i < planned.size() && planned[i].at("unit") == unit && planned[i].value("shard", size_t(0)) == k;
             ++k)
          parts.push_back(std::move(results[i++]));
        if (n < 1 || parts.size() != n) throw Error("does not list its " + std::to_string(n) + " shards in order");
        joined.push_back(t.sweep_join(planned[i - 1], parts));
      } catch (const json::exception& e) {  // a hand-edited unit, a result of the wrong shape
        throw Error("sweep merge: " + m.dir + "/manifest.jsonl: unit " + unit.dump() + ": " + e.what());
      } catch (const Error& e) {  // shards that do not join (the target's own check)
        throw Error("sweep merge: " + m.dir + "/manifest.jsonl: unit " + unit.dump() + ": " + e.what());
      }
    }
    return joined;
  }

  int do_merge() {
    const sweep::Manifest m = sweep::read_manifest(dir);
    std::vector<json> results;
    std::vector<size_t> bad;
    for (size_t c = 0; c < m.cells.size(); ++c) {
      std::string why;
      json numbers;
      const sweep::CellState st = sweep::cell_state(m, c, &why, &numbers);
      if (st == sweep::CellState::Corrupt) std::cerr << "ordo sweep: " << why << "\n";
      if (st != sweep::CellState::Done) bad.push_back(c);
      if (st == sweep::CellState::Done && numbers.size() != m.cells[c].at("units").size())
        throw Error("sweep merge: " + sweep::result_path(m, c) + " holds " + std::to_string(numbers.size()) +
                    " units' numbers, the manifest plans " + std::to_string(m.cells[c].at("units").size()));
      for (json& n : numbers) results.push_back(std::move(n));
    }
    if (!bad.empty())
      throw Error("sweep merge: " + std::to_string(bad.size()) + " of " + std::to_string(m.cells.size()) +
                  " cells of " + m.dir + " are not done: " + sweep::id_ranges(bad) +
                  " (ordo sweep status; ordo sweep run reruns them)");
    const std::string j = absolute_or_empty(json_out), r = absolute_or_empty(report_out);
    ParsedTarget p = open_target(m);
    p.target->sweep_outputs(j, r);
    p.target->sweep_render(join_shards(m, *p.target, std::move(results)));
    return 0;
  }

  int do_status() {
    const sweep::Manifest m = sweep::read_manifest(dir);
    std::vector<size_t> by[4];
    for (size_t c = 0; c < m.cells.size(); ++c) {
      std::string why;
      const sweep::CellState st = sweep::cell_state(m, c, &why);
      by[static_cast<int>(st)].push_back(c);
      if (st == sweep::CellState::Corrupt) std::cerr << why << "\n";
    }
    std::cout << m.dir << ": " << m.cells.size() << " cells of ordo " << m.command << "\n";
    for (int s = 0; s < 4; ++s) {
      std::cout << sweep::state_name(static_cast<sweep::CellState>(s)) << " " << by[s].size();
      if (!by[s].empty()) std::cout << ": " << sweep::id_ranges(by[s]);
      std::cout << "\n";
    }
    return 0;
  }

  int run() override {
    validate();
    // The parent allows extras for sbatch's sake: every other subcommand refuses them.
    for (CLI::App* a : {run_, merge, status, slurm->parsed() ? nullptr : sweep_app})
      if (a && !a->remaining().empty())
        throw UsageError("ordo sweep" + (a == sweep_app ? std::string() : " " + a->get_name()) +
                         ": unexpected argument '" + a->remaining().front() + "'; see ordo sweep --help");
    if (plan->parsed()) return do_plan();
    if (run_->parsed()) return do_run();
    if (merge->parsed()) return do_merge();
    if (status->parsed()) return do_status();
    so.submit = !dry_run;
    so.sbatch_args = slurm->remaining();
    for (const std::string& a : sweep_app->remaining()) so.sbatch_args.push_back(a);
    if (!so.sbatch_args.empty() && so.sbatch_args.front() == "--") so.sbatch_args.erase(so.sbatch_args.begin());
    sweep::submit_arrays(sweep::read_manifest(dir), so);
    return 0;
  }
};

}  // namespace

std::unique_ptr<Command> make_sweep() { return std::make_unique<SweepCommand>(); }

}  // namespace ordo::cli
