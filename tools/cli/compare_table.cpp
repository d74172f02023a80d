// `ordo compare`'s terminal table, rendered from the JSON document (as --json and --html are).
#include "compare_table.hpp"

#include <algorithm>

#include "compare_groups.hpp"
#include "compare_report.hpp"
#include "compare_tasks.hpp"

namespace ordo::cli {
namespace {

using json = nlohmann::json;
using namespace report;

// Per (kind, scheme): mean ± 95% interval over seeds and items; paired tests between schemes.
void print_word_order_groups(const json& wo, std::ostream& o) {
  if (wo["groups"].empty()) return;
  o << "\n== word order by kind and scheme: mean ± 95% interval (Student t) over seeds; item margin over pairs\n"
    << column("kind", 6) << column("scheme", 12) << column("seeds", 6) << column("accuracy", 22)
    << column("mean margin", 24) << column("item margin", 24) << "\n";
  for (const json& g : wo["groups"])
    o << column(g["kind"], 6) << column(g["scheme"], 12) << column(g["seeds"], 6) << column(pm(g["accuracy"]), 22)
      << column(pm(g["mean_margin"]), 24) << column(pm(g["item_margin"]), 24) << "\n";
  if (wo["tests"].empty()) return;
  o << "\n== word order, paired t-tests on per-pair margins averaged over seeds (two-sided)\n"
    << column("kind", 6) << column("a", 12) << column("b", 12) << column("pairs", 6) << column("mean a-b", 12)
    << column("t", 12) << column("p", 12) << "\n";
  for (const json& t : wo["tests"])
    o << column(t["kind"], 6) << column(t["a"], 12) << column(t["b"], 12) << column(t["n"], 6)
      << column(t["mean_diff"], 12) << column(t["t"], 12) << column(t["p"], 12) << "\n";
}

// Every pair, then per model: both scores and the margin ("tie" within float rounding).
void print_word_order_pairs(const json& wo, int lw, std::ostream& o) {
  o << "\n== word order per pair: score(original), score(swapped), margin (nats; PLL for masked-LM "
       "encoders, log-prob otherwise)\n";
  for (size_t i = 0; i < wo["pairs"].size(); ++i) {
    o << "#" << i + 1 << "  " << wo["pairs"][i]["original"].get<std::string>() << "\n    "
      << wo["pairs"][i]["swapped"].get<std::string>() << "\n";
    for (const json& r : wo["results"]) {
      if (!r.contains("scores")) continue;
      const json& sc = r["scores"][i];
      o << "    " << column(r["model"], lw) << column(sc["original"], 12) << column(sc["swapped"], 12)
        << column(sc["margin"], 12) << (sc["tie"].get<bool>() ? "tie" : "") << "\n";
    }
  }
}

}  // namespace

void print_compare_table(const json& doc, std::ostream& o) {
  int lw = 12, rw = 12;  // label column widths: models, length rows
  for (const json& mm : doc["models"]) lw = std::max(lw, static_cast<int>(mm["label"].get<std::string>().size()) + 2);
  if (doc.contains("length"))
    for (const json& r : doc["length"]["results"])
      rw = std::max(rw, static_cast<int>(r["label"].get<std::string>().size()) + 2);
  if (doc.contains("word_order")) {
    o << "== word order: prefers the original over two words swapped (" << doc["word_order"]["pairs"].size()
      << " pairs)\n"
      << column("model", lw) << column("scheme", 12) << column("score", 8) << column("accuracy", 10)
      << column("margin", 12) << column("ties", 6) << "\n";
    for (const json& r : doc["word_order"]["results"])
      o << column(r["model"], lw) << column(r["scheme"], 12) << column(r.value("method", json()), 8)
        << column(r.value("accuracy", json()), 10) << column(r.value("mean_margin", json()), 12)
        << column(r.value("ties", json()), 6) << (r.contains("error") ? r["error"].get<std::string>() : "") << "\n";
    print_word_order_groups(doc["word_order"], o);
    print_word_order_pairs(doc["word_order"], lw, o);
  }
  if (doc.contains("permutation")) {
    o << "\n== permutation probe: bidirectional, max |h(perm x) - perm h(x)|\n"
      << column("model", lw) << column("scheme", 12) << column("tokens", 8) << column("max_abs", 14)
      << column("relative", 14) << "\n";
    for (const json& r : doc["permutation"]["results"])
      o << column(r["model"], lw) << column(r["scheme"], 12) << column(r["tokens"], 8)
        << column(r.value("max_abs_error", json()), 14) << column(r.value("rel_error", json()), 14)
        << (r.contains("error") ? r["error"].get<std::string>() : "") << "\n";
    print_seed_groups(doc, "permutation", o);
  }
  if (doc.contains("length")) {
    o << "\n== length: perplexity at multiples of the trained length\n" << column("row", rw);
    for (const json& k : doc["settings"]["multiples"]) o << column(k.dump() + "x", 11);
    o << "\n";
    for (const json& r : doc["length"]["results"]) {
      o << column(r["label"], rw);
      for (const json& p : r["points"]) o << column(p["ppl"], 11);
      o << "\n";
    }
    print_seed_groups(doc, "length", o);
  }
  if (doc.contains("attention")) {
    o << "\n== attention: mean weight by query-key distance\n" << column("model", lw);
    for (const json& b : doc["attention"]["buckets"]) o << column(b["label"], 11);
    o << "\n";
    for (const json& r : doc["attention"]["results"]) {
      o << column(r["model"], lw);
      for (const json& v : r["mean_weight"]) o << column(v, 11);
      o << "\n";
    }
    print_seed_groups(doc, "attention", o);
  }
  if (doc.contains("synthetic")) print_synthetic(doc, o);
  o << std::flush;
}

}  // namespace ordo::cli
