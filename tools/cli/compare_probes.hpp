// `ordo compare`'s four model probes on one entry (word order, permutation, length, attention by
// distance), each row stored as the JSON document keeps it.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "compare_models.hpp"
#include "ordo/probes.hpp"
#include "progress.hpp"

namespace ordo::cli {

// The probes run on each model, in the order a report lists them.
inline constexpr const char* kModelProbes[] = {"word-order", "permutation", "length", "attention"};

// The probes' flags (after run() has filled in the defaults).
struct ProbeSettings {
  std::string tasks = "word-order,permutation,length,attention";
  bool quick = false;
  int64_t max_pairs = 0, ctx_base = 0, probe_tokens = 0, attn_windows = 0, length_tokens = -1;
  bool want(const std::string& task) const;  // is `task` among --tasks
  // A sweep shard's items, [lo, hi) (`on` false: all; compare_items below): its rows keep the raw
  // numbers join_probe_rows needs to rebuild the one-process rows.
  struct Items {
    bool on = false;
    size_t lo = 0, hi = 0;
  };
  Items word_order_items, length_items;
};

// How many items a probe's run splits into for sweep shards: word order, its steps of
// probes::kPairsPerStep pairs; length, its context multiples; 1 for the others (their numbers are
// maxima and averages over one forward pass or a few windows).
size_t compare_items(const std::string& probe, size_t pairs, size_t multiples);

// One model's rows of `probe` from its shards' rows (one list per shard, in item order), equal to
// the rows of one run over every item.
nlohmann::json join_probe_rows(const std::string& probe, const std::vector<nlohmann::json>& shard_rows);

// Every probe's results, one row per model (length: one per model and multiple).
struct ProbeResults {
  nlohmann::json word_order = nlohmann::json::array(), permutation = nlohmann::json::array(),
                 length = nlohmann::json::array(), attention = nlohmann::json::array();
  std::vector<probes::DistanceBucket> buckets;  // the longest model's
};

// Loads one entry, adds its description to doc["models"] and its rows to r.
void probe_entry(const ProbeSettings& ps, const CompareEntry& e, const ModelOptions& opts, const std::string& text,
                 const std::vector<probes::WordPair>& pairs, const std::vector<int64_t>& multiples, const Progress& pg,
                 nlohmann::json& doc, ProbeResults& r);

}  // namespace ordo::cli
