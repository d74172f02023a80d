// `ordo sweep slurm`: the missing cells of a sweep as Slurm job arrays, written and submitted.
#pragma once

#include <string>
#include <vector>

#include "sweep_dir.hpp"

namespace ordo::cli::sweep {

struct SlurmOptions {
  int max_parallel = 0;                  // %K: array tasks running at once (0: no limit)
  long max_array_size = 1001;            // the cluster's MaxArraySize: array indices stay below it
  bool submit = true;                    // false: --dry-run / --script-only, write the scripts only
  std::vector<std::string> sbatch_args;  // passed to sbatch as given
};

// Writes DIR/slurm/array-K.sbatch, one per block of max_array_size cell ids holding a missing,
// failed or corrupt cell, and submits each with sbatch (--parsable). Prints what it did; returns
// the number of scripts.
size_t submit_arrays(const Manifest& m, const SlurmOptions& o);

}  // namespace ordo::cli::sweep
