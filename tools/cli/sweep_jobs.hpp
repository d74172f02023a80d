// Processes for `ordo sweep`: cells as child `ordo sweep run --cell I` processes, N at a time (a
// crash in one cell leaves the others running), and programs run with their output captured (sbatch).
#pragma once

#include <string>
#include <vector>

#include "sweep_dir.hpp"

namespace ordo::cli::sweep {

// This program's path (the `ordo` launcher), for child processes and job scripts.
std::string self_exe();

// Runs every cell of `cells` as `ordo sweep run DIR --cell I` (output in DIR/logs/I.log), `jobs` at a
// time (with --force when `force`); returns the cells that failed (non-zero exit or a signal), after
// saying so on stderr.
std::vector<size_t> run_cells(const Manifest& m, const std::vector<size_t>& cells, int jobs, bool force);

// argv[0] looked up in PATH; its exit code (127: not found) and stdout+stderr.
int run_capture(const std::vector<std::string>& argv, std::string& output);

}  // namespace ordo::cli::sweep
