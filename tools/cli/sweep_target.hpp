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
  // One description per cell (an object with at least "label"), in the order the one-process run
  // computes them. Reads the flags and the model list, loads no model.
  virtual std::vector<nlohmann::json> sweep_cells() = 0;
  // The numbers of cell `index` (described by `cell`, as sweep_cells gave it); prints nothing on stdout.
  virtual nlohmann::json sweep_cell(size_t index, const nlohmann::json& cell) = 0;
  // The command's table, --json and report from every cell's numbers, in cell order.
  virtual void sweep_render(const std::vector<nlohmann::json>& results) = 0;
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
