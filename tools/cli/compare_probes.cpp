// `ordo compare`'s four model probes on one entry (word order, permutation, length, attention by
// distance), each row stored as the JSON document keeps it.
#include "compare_probes.hpp"

#include <algorithm>

#include "compare_report.hpp"

namespace ordo::cli {
namespace {

using json = nlohmann::json;
using namespace report;

// The model as one compare entry sees it.
struct Subject {
  const CompareEntry& entry;
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

void fill_word_order(json& r, const probes::WordOrderResult& w) {
  r["method"] = w.method;
  r["pairs"] = w.pairs.size();
  r["wins"] = w.wins;
  r["ties"] = w.ties;
  r["accuracy"] = r6(w.accuracy);
  r["mean_margin"] = r6(w.mean_margin);
  r["scores"] = json::array();
  for (const probes::PairScore& p : w.pairs)
    r["scores"].push_back({{"original", r6(p.original)},
                           {"swapped", r6(p.swapped)},
                           {"margin", r6(p.margin)},
                           {"tie", p.tie},
                           {"same_tokens", p.same_tokens}});
}

json word_order_result(const Subject& s, const std::vector<probes::WordPair>& pairs, const ProbeSettings::Items& items,
                       const Progress& pg) {
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
    if (items.on) {  // a shard: its steps' pairs, raw, for join_word_order
      const size_t lo = items.lo * probes::kPairsPerStep, hi = std::min(pairs.size(), items.hi * probes::kPairsPerStep);
      if (lo >= hi)
        throw Error("word order: shard items [" + std::to_string(items.lo) + ", " + std::to_string(items.hi) +
                    ") are past the " + std::to_string(pairs.size()) + " pairs");
      const probes::WordOrderResult w =
          probes::word_order(s.model, std::vector<probes::WordPair>(pairs.begin() + lo, pairs.begin() + hi));
      r["method"] = w.method;
      r["raw"] = json::array();
      for (const probes::PairScore& p : w.pairs)
        r["raw"].push_back({p.original, p.swapped, p.margin, p.tie, p.same_tokens});
      return r;
    }
    const probes::WordOrderResult w = probes::word_order(s.model, pairs, [&](size_t done, size_t total) {
      pg.show("[", s.entry.label, "] word order ", done, "/", total);
    });
    pg.clear();
    fill_word_order(r, w);
  } catch (const Error& err) {  // e.g. a sentence longer than a learned table
    r["error"] = err.what();
    pg.note("[" + s.entry.label + "] word order: " + err.what());
  }
  return r;
}

json permutation_result(const ProbeSettings& ps, const Subject& s) {
  const int64_t P = ps.probe_tokens > 0 ? ps.probe_tokens
                    : ps.quick          ? std::min<int64_t>(16, s.trained)
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

void length_results(const ProbeSettings& ps, const Subject& s, const std::vector<int64_t>& all_multiples,
                    const Progress& pg, json& out) {
  int64_t max_ctx = 0;
  for (int64_t k : all_multiples)
    if (s.base * k <= static_cast<int64_t>(s.heldout.size())) max_ctx = std::max(max_ctx, s.base * k);
  std::vector<int32_t> ids = s.heldout;
  const int64_t cap = ps.length_tokens < 0 ? -ps.length_tokens * max_ctx : ps.length_tokens;
  if (cap > 0 && static_cast<int64_t>(ids.size()) > cap) ids.resize(cap);
  if (max_ctx > 0) ids.resize(ids.size() / max_ctx * max_ctx);  // the same tokens at every length
  // A shard scores its multiples only, on the tokens every multiple scores (max_ctx is the whole run's).
  std::vector<int64_t> multiples = all_multiples;
  if (ps.length_items.on)
    multiples.assign(all_multiples.begin() + std::min(ps.length_items.lo, all_multiples.size()),
                     all_multiples.begin() + std::min(ps.length_items.hi, all_multiples.size()));
  for (const probes::LengthMethod& meth : probes::length_methods(s.scheme)) {
    const std::string label = meth.name == "none" ? s.entry.label : s.entry.label + "+" + meth.name;
    json row = s.row({{"method", meth.name}, {"label", label}, {"points", json::array()}});
    pg.note("[" + s.entry.label + "] length: " + label + " on " + std::to_string(ids.size()) + " tokens");
    std::vector<probes::LengthPoint> points;
    if (s.model.has_tokenizer()) {
      points =
          probes::length(s.model, ids, meth, multiples, s.base, s.trained,
                         [&](const probes::LengthPoint& pt, int64_t done, int64_t total) {
                           pg.show("[", label, "] ", pt.multiple, "x (", pt.ctx, " tokens): window ", done, "/", total);
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
      json j = {{"multiple", pt.multiple}, {"ctx", pt.ctx},
                {"factor", r6(pt.factor)}, {"windows", pt.windows},
                {"tokens", pt.tokens},     {"ppl", pt.error.empty() ? num_or_null(pt.ppl) : json(nullptr)}};
      if (!pt.error.empty()) j["error"] = pt.error;
      row["points"].push_back(j);
    }
    out.push_back(row);
  }
}

json attention_result(const ProbeSettings& ps, const Subject& s, const std::vector<probes::DistanceBucket>& bk,
                      const Progress& pg) {
  std::vector<std::vector<int32_t>> windows;
  for (int64_t w = 0; w < ps.attn_windows; ++w) {
    if (static_cast<int64_t>(s.heldout.size()) >= (w + 1) * s.base)
      windows.emplace_back(s.heldout.begin() + w * s.base, s.heldout.begin() + (w + 1) * s.base);
    else
      windows.push_back(probes::probe_ids({}, s.base, s.model.spec().vocab_size, 100 + w));
  }
  pg.note("[" + s.entry.label + "] attention by distance: " + std::to_string(ps.attn_windows) + " window(s) of " +
          std::to_string(s.base));
  json mean = json::array(), mass = json::array();
  try {
    const probes::AttentionProfile a = probes::attention_by_distance(s.model, windows, bk, [&](size_t w) {
      pg.show("[", s.entry.label, "] attention window ", w + 1, "/", ps.attn_windows);
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

}  // namespace

size_t compare_items(const std::string& probe, size_t pairs, size_t multiples) {
  if (probe == "word-order") return std::max<size_t>(1, (pairs + probes::kPairsPerStep - 1) / probes::kPairsPerStep);
  if (probe == "length") return std::max<size_t>(1, multiples);
  return 1;
}

json join_probe_rows(const std::string& probe, const std::vector<json>& shard_rows) {
  if (shard_rows.size() == 1 || (probe != "word-order" && probe != "length")) return shard_rows.at(0);
  json rows = shard_rows.at(0);
  if (probe == "length") {  // the same rows (one per method) in each shard, each with its multiples' points
    for (size_t k = 1; k < shard_rows.size(); ++k) {
      if (shard_rows[k].size() != rows.size()) throw Error("length shards hold different methods");
      for (size_t i = 0; i < rows.size(); ++i)
        for (const json& pt : shard_rows[k][i].at("points")) rows[i]["points"].push_back(pt);
    }
    return rows;
  }
  for (json& row : rows) {  // one word-order row: the first shard's error, or every shard's pairs
    for (const json& sr : shard_rows)
      if (sr.at(0).contains("error")) return sr;
    probes::WordOrderResult w;
    w.method = row.at("method").get<std::string>();
    for (const json& sr : shard_rows)
      for (const json& p : sr.at(0).at("raw"))
        w.pairs.push_back({p.at(0).get<double>(), p.at(1).get<double>(), p.at(2).get<double>(), p.at(3).get<bool>(),
                           p.at(4).get<bool>()});
    probes::summarize_word_order(w);
    row.erase("raw");
    fill_word_order(row, w);
  }
  return rows;
}

bool ProbeSettings::want(const std::string& task) const {
  return ("," + tasks + ",").find("," + task + ",") != std::string::npos;
}

void probe_entry(const ProbeSettings& ps, const CompareEntry& e, const ModelOptions& opts, const std::string& text,
                 const std::vector<probes::WordPair>& pairs, const std::vector<int64_t>& multiples, const Progress& pg,
                 json& doc, ProbeResults& r) {
  pg.note("[" + e.label + "] loading " + e.dir + (e.position.empty() ? "" : " with --position " + e.position));
  std::string tok_error;
  Model m = load_entry(e, opts, tok_error);
  const PositionConfig& pc = m.spec().position;
  const int64_t trained = pc.max_positions > 0 ? pc.max_positions : 128;
  std::vector<int32_t> heldout;
  if (m.has_tokenizer() && !text.empty()) heldout = m.encode(text, false);
  const Subject s{e, m, pc.scheme, tok_error, trained, ps.ctx_base > 0 ? ps.ctx_base : trained, std::move(heldout)};
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
  if (ps.want("word-order")) r.word_order.push_back(word_order_result(s, pairs, ps.word_order_items, pg));
  if (ps.want("permutation")) r.permutation.push_back(permutation_result(ps, s));
  if (ps.want("length")) {
    if (m.spec().graph == GraphKind::Encoder)  // perplexity needs next-token probabilities
      pg.note("[" + e.label + "] length: skipped (an encoder has no causal perplexity)");
    else
      length_results(ps, s, multiples, pg, r.length);
  }
  if (ps.want("attention")) {
    const std::vector<probes::DistanceBucket> bk = probes::distance_buckets(s.base - 1);
    if (bk.size() > r.buckets.size()) r.buckets = bk;
    r.attention.push_back(attention_result(ps, s, bk, pg));
  }
}

}  // namespace ordo::cli
