// `ordo compare --tasks synthetic`: length generalization on the zoo's synthetic tasks (copy,
// reverse, role, add; Kazemnejad et al. 2023). The task models are the zoo's tasks/* directories
// whose config.json says "zoo": {"kind": "tasks", ...} (not with --no-zoo) and every -m directory
// that says so. Each runs the suite as it is and with every factor-only scaling of its scheme at
// the task lengths n beyond the longest trained, L (config "zoo": {"train_length"}), at factor n / L
// (without train_length: beyond max_position_embeddings, at the longest item's share of it). Results go into compare's
// one JSON document, section "synthetic": per model and method, accuracy per (task, length) with
// per-item correctness; per group (scheme, method; the seeds are the replicates), the mean
// accuracy over seeds with its 95% interval.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "ordo/ordo.hpp"
#include "progress.hpp"

namespace ordo::cli {

struct SyntheticTaskOptions {
  std::string suite;  // --suite (default: ZOO/tasks/suite.jsonl)
  int batch = 32;     // --task-batch: sequences in flight
  void add(CLI::App* c);
  void validate() const;
};

// The "synthetic" section. zoo_dir: "" with --no-zoo. Error when there is no suite or no task model.
nlohmann::json synthetic_section(const SyntheticTaskOptions& o, const std::string& zoo_dir,
                                 const std::vector<std::string>& dirs, const ModelOptions& opts);

// The same in parts, for sweep cells (one per task model): the task models' labels (no model is
// loaded), one model's description and rows, and the section from every model's part in order.
std::vector<std::string> synthetic_model_labels(const SyntheticTaskOptions& o, const std::string& zoo_dir,
                                                const std::vector<std::string>& dirs);
nlohmann::json synthetic_model(const SyntheticTaskOptions& o, const std::string& zoo_dir,
                               const std::vector<std::string>& dirs, const ModelOptions& opts, size_t k,
                               const Progress& pg);
nlohmann::json synthetic_join(const SyntheticTaskOptions& o, const std::string& zoo_dir,
                              const std::vector<nlohmann::json>& per_model);

// The section as terminal tables and as HTML (tables, a chart per task), from the document.
void print_synthetic(const nlohmann::json& doc, std::ostream& o);
void html_synthetic(const nlohmann::json& doc, std::ostream& h);

}  // namespace ordo::cli
