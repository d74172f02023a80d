// Commands whose grid runs as sweep cells (compare, ppl): their cells, one cell's numbers, and the
// renderer their one-process run shares with `ordo sweep merge`.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common.hpp"

namespace ordo::cli {

struct SweepTarget {
  virtual ~SweepTarget() = default;
  // One description per unit of work (an object with at least "label"; compare: a model, ppl: a
  // setting at a length), in the order the one-process run computes them. Loads no model.
  virtual std::vector<nlohmann::json> sweep_units() = 0;
  // The numbers of units first, first + 1, ... (described as sweep_units gave them), one per unit;
  // what they share is loaded once (ppl: the model). Prints nothing on stdout.
  virtual std::vector<nlohmann::json> sweep_run(size_t first, const std::vector<nlohmann::json>& units) = 0;
  // `plan --shards`: how many items `unit` splits into (a probe's steps of pairs, a ppl row's groups
  // of windows); a shard is the unit with "items": [lo, hi) and runs only those. Loads no model.
  virtual size_t sweep_items(const nlohmann::json& unit) = 0;
  // A unit's numbers from its shards' numbers (in item order): what sweep_run gives for the whole
  // unit, so the statistics computed from them in sweep_render are the one-process run's.
  virtual nlohmann::json sweep_join(const nlohmann::json& unit, const std::vector<nlohmann::json>& shards) = 0;
  // The command's table, --json and report from every unit's numbers, in order.
  virtual void sweep_render(const std::vector<nlohmann::json>& numbers) = 0;
  // Output files given to `ordo sweep merge` replace the planned ones ("" keeps them): --json and
  // the command's report (compare: --html, ppl: --plot).
  virtual void sweep_outputs(const std::string& json, const std::string& report) = 0;
};

// `ordo COMMAND ARGS...` parsed and validated as the CLI does; Error when COMMAND cannot run as a
// sweep, UsageError for its flags.
struct ParsedTarget {
  std::unique_ptr<CliApp> cli;
  SweepTarget* target = nullptr;
};
ParsedTarget parse_sweep_target(const std::string& command, const std::vector<std::string>& args);

}  // namespace ordo::cli
