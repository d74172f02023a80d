// ordo.probes (word order, permutation, length, attention by distance) over ordo/probes.hpp, and
// the in-process CLI runner that ordo.compare() uses so its JSON is `ordo compare --json`'s.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <iostream>
#include <mutex>
#include <shared_mutex>
#include <sstream>

#include "bindings.hpp"
#include "common.hpp"
#include "ordo/probes.hpp"

namespace ordo::py {
namespace {

// The probes that retune the model for their run need it alone; one already in use is an error,
// not a wait (a stream left open by the same thread would never let go).
std::unique_lock<std::shared_mutex> exclusive(SharedModel& sm, const char* probe) {
  std::unique_lock<std::shared_mutex> lock(sm.mu, std::try_to_lock);
  if (!lock.owns_lock())
    throw Error(std::string(probe) +
                " changes the model's settings while it runs: it needs the model alone, but another call (or an "
                "open stream) is using it");
  return lock;
}

std::vector<probes::WordPair> to_pairs(const pyb::object& o) {
  std::vector<probes::WordPair> out;
  size_t i = 0;
  for (pyb::handle h : o) {
    const std::string where = "pairs[" + std::to_string(i++) + "]";
    probes::WordPair p;
    if (pyb::isinstance<pyb::dict>(h)) {
      pyb::dict d = h.cast<pyb::dict>();
      if (!d.contains("original") || !d.contains("swapped"))
        throw ArgumentError(where + ": needs 'original' and 'swapped'");
      p.original = d["original"].cast<std::string>();
      p.swapped = d["swapped"].cast<std::string>();
    } else {
      try {
        auto t = h.cast<std::pair<std::string, std::string>>();
        p.original = t.first;
        p.swapped = t.second;
      } catch (const pyb::cast_error&) {
        throw ArgumentError(where + ": expected (original, swapped) or {'original': ..., 'swapped': ...}");
      }
    }
    out.push_back(std::move(p));
  }
  if (out.empty()) throw ArgumentError("pairs: no pair");
  return out;
}

pyb::dict word_order(SharedModel& sm, const pyb::object& pairs) {
  const std::vector<probes::WordPair> ps = to_pairs(pairs);
  probes::WordOrderResult r;
  {
    pyb::gil_scoped_release nogil;
    std::shared_lock<std::shared_mutex> shared(sm.mu);
    r = probes::word_order(sm.m, ps);
  }
  pyb::list rows;
  for (size_t i = 0; i < r.pairs.size(); ++i) {
    const probes::PairScore& s = r.pairs[i];
    pyb::dict d;
    d["original"] = ps[i].original;
    d["swapped"] = ps[i].swapped;
    d["score_original"] = s.original;
    d["score_swapped"] = s.swapped;
    d["margin"] = s.margin;
    d["tie"] = s.tie;
    d["same_tokens"] = s.same_tokens;
    rows.append(d);
  }
  pyb::dict d;
  d["method"] = r.method;
  d["wins"] = r.wins;
  d["ties"] = r.ties;
  d["accuracy"] = r.accuracy;
  d["mean_margin"] = r.mean_margin;
  d["pairs"] = rows;
  return d;
}

pyb::dict permutation(SharedModel& sm, const std::vector<int32_t>& ids, uint64_t seed) {
  check_ids(ids, sm.m.spec().vocab_size, "ids");
  probes::PermutationResult r;
  {
    pyb::gil_scoped_release nogil;
    auto lock = exclusive(sm, "permutation");
    r = probes::permutation(sm.m, ids, seed);
  }
  pyb::dict d;
  d["max_abs_error"] = r.max_abs_error;
  d["max_abs_hidden"] = r.max_abs_hidden;
  d["rel_error"] = r.rel_error;
  return d;
}

pyb::list length(SharedModel& sm, const std::vector<int32_t>& ids, const std::string& method,
                 const std::vector<int64_t>& multiples, std::optional<int64_t> base, std::optional<int64_t> trained) {
  check_ids(ids, sm.m.spec().vocab_size, "ids");
  PositionConfig p;  // a copy, read under `mu` shared: another thread's probe may be retuning it
  {
    pyb::gil_scoped_release nogil;
    std::shared_lock<std::shared_mutex> shared(sm.mu);
    p = sm.m.spec().position;
  }
  const int64_t tr = trained                                ? *trained
                     : p.scaling.original_max_positions > 0 ? p.scaling.original_max_positions
                                                            : p.max_positions;
  if (tr < 1) throw ArgumentError("trained must be >= 1 (the model states no trained length: give trained=)");
  if (base && *base < 1) throw ArgumentError("base must be >= 1, got " + std::to_string(*base));
  probes::LengthMethod lm;
  bool found = false;
  for (const probes::LengthMethod& x : probes::length_methods(p.scheme))
    if (x.name == method) lm = x, found = true;
  if (!found) {
    std::string known;
    for (const probes::LengthMethod& x : probes::length_methods(p.scheme))
      known += (known.empty() ? "" : ", ") + x.name;
    throw ArgumentError("method '" + method + "' is not one the " + p.scheme + " scheme runs from a factor: " + known);
  }
  for (int64_t m : multiples)
    if (m < 1) throw ArgumentError("multiples must be >= 1, got " + std::to_string(m));
  std::vector<probes::LengthPoint> pts;
  {
    pyb::gil_scoped_release nogil;
    auto lock = exclusive(sm, "length");
    pts = probes::length(sm.m, ids, lm, multiples, base ? *base : tr, tr);
  }
  pyb::list out;
  for (const probes::LengthPoint& x : pts) {
    pyb::dict d;
    d["method"] = method;
    d["multiple"] = x.multiple;
    d["ctx"] = x.ctx;
    d["factor"] = x.factor;
    d["windows"] = x.windows;
    d["tokens"] = x.tokens;
    d["ppl"] = x.error.empty() ? pyb::object(pyb::float_(x.ppl)) : pyb::none();
    d["error"] = x.error.empty() ? pyb::none() : pyb::object(pyb::str(x.error));
    out.append(d);
  }
  return out;
}

pyb::dict attention_by_distance(SharedModel& sm, const std::vector<std::vector<int32_t>>& windows,
                                std::optional<int64_t> max_distance) {
  if (windows.empty()) throw ArgumentError("windows: no window");
  if (max_distance && *max_distance < 0)
    throw ArgumentError("max_distance must be >= 0, got " + std::to_string(*max_distance));
  int64_t longest = 0;
  for (size_t i = 0; i < windows.size(); ++i) {
    check_ids(windows[i], sm.m.spec().vocab_size, "windows[" + std::to_string(i) + "]");
    longest = std::max<int64_t>(longest, static_cast<int64_t>(windows[i].size()));
  }
  const std::vector<probes::DistanceBucket> buckets =
      probes::distance_buckets(max_distance ? *max_distance : longest - 1);
  probes::AttentionProfile r;
  {
    pyb::gil_scoped_release nogil;
    auto lock = exclusive(sm, "attention_by_distance");
    r = probes::attention_by_distance(sm.m, windows, buckets);
  }
  pyb::list labels, lo, hi;
  for (const probes::DistanceBucket& b : buckets) {
    labels.append(b.label());
    lo.append(b.lo);
    hi.append(b.hi);
  }
  pyb::dict d;
  d["buckets"] = labels;
  d["lo"] = lo;
  d["hi"] = hi;
  d["rows"] = r.rows;
  d["mean_weight"] = r.mean_weight;
  d["mass"] = r.mass;
  return d;
}

// Runs `ordo <argv...>` in this process (the CLI's own parsing and code), its stdout discarded;
// returns the exit code. ordo.compare passes --json FILE and reads the file.
int run_cli(const std::vector<std::string>& args) {
  std::vector<std::string> all = {"ordo"};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<const char*> argv;
  for (const std::string& a : all) argv.push_back(a.c_str());
  pyb::gil_scoped_release nogil;
  static std::mutex cli_mu;  // the CLI writes std::cout, swapped out below: one run at a time
  std::lock_guard<std::mutex> lock(cli_mu);
  cli::CliApp app;
  cli::Command* cmd = nullptr;
  try {
    cmd = app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::Error& e) {
    throw ArgumentError(e.what());
  }
  if (!cmd) throw ArgumentError("no ordo subcommand given");
  std::ostringstream sink;
  std::streambuf* old = std::cout.rdbuf(sink.rdbuf());
  try {
    const int rc = cmd->run();
    std::cout.rdbuf(old);
    return rc;
  } catch (...) {
    std::cout.rdbuf(old);
    throw;
  }
}

}  // namespace

void bind_probes(pyb::module_& mod) {
  pyb::module_ p = mod.def_submodule("_probes", "Probes of how a model uses position (ordo/probes.hpp)");
  p.def("word_order", &word_order, pyb::arg("model"), pyb::arg("pairs"),
        "Scores each (original, swapped) pair: causal log-prob (decoders) or PLL (masked-LM encoders).");
  p.def("permutation", &permutation, pyb::arg("model"), pyb::arg("ids"), pyb::kw_only(),
        pyb::arg("seed") = probes::kPermutationSeed);
  p.def("length", &length, pyb::arg("model"), pyb::arg("ids"), pyb::kw_only(), pyb::arg("method") = "none",
        pyb::arg("multiples") = std::vector<int64_t>{1, 2, 4}, pyb::arg("base") = pyb::none(),
        pyb::arg("trained") = pyb::none());
  p.def("attention_by_distance", &attention_by_distance, pyb::arg("model"), pyb::arg("windows"), pyb::kw_only(),
        pyb::arg("max_distance") = pyb::none());
  p.def("split_sentences", &probes::split_sentences, pyb::arg("text"));
  p.def(
      "default_pairs",
      [](const std::string& text, size_t max_pairs, uint64_t seed) {
        std::vector<pyb::tuple> out;
        for (const probes::WordPair& w : probes::default_pairs(text, max_pairs, seed))
          out.push_back(pyb::make_tuple(w.original, w.swapped));
        return out;
      },
      pyb::arg("text"), pyb::kw_only(), pyb::arg("max_pairs") = 200, pyb::arg("seed") = probes::kPairSeed);
  p.def(
      "length_methods",
      [](const std::string& scheme) {
        std::vector<std::string> out;
        for (const probes::LengthMethod& m : probes::length_methods(scheme)) out.push_back(m.name);
        return out;
      },
      pyb::arg("scheme"));
  mod.def("_run_cli", &run_cli, pyb::arg("args"));
}

}  // namespace ordo::py
