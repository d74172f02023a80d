// ordo compare: position schemes side by side on four probes — word order, permutation
// equivariance, perplexity beyond the trained length, attention weight against distance.
//
// Models: the zoo (models/zoo/{none,learned,sinusoidal,relative,rope,alibi}, six decoders identical
// but for the position scheme) unless --no-zoo, plus every -m DIR, plus for every -m DIR one
// ablation entry per --position NAME (the same weights with the scheme replaced).
//
// All numbers go into one JSON document (rounded to 6 significant digits when stored); the
// terminal table, --json and --html are all rendered from it, so they agree by construction. The
// HTML embeds the document and tags every numeric cell with its JSON pointer (data-json="/...").
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common.hpp"
#include "ordo/perplexity.hpp"
#include "svg_chart.hpp"

namespace fs = std::filesystem;

namespace ordo::cli {
namespace {

using json = nlohmann::json;

constexpr uint64_t kPairSeed = 0x6f72646f;         // "ordo": which two words each default pair swaps
constexpr uint64_t kPermutationSeed = 0x7065726d;  // "perm": the permutation of the probe
const char* const kZooSchemes[] = {"none", "learned", "sinusoidal", "relative", "rope", "alibi"};

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Rounded to 6 significant digits, so every rendering of the number can print it exactly.
double r6(double v) {
  if (!std::isfinite(v) || v == 0.0) return v;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return std::strtod(buf, nullptr);
}
json num_or_null(double v) { return std::isfinite(v) ? json(r6(v)) : json(nullptr); }


// ---- word-order pairs ----------------------------------------------------------------------------

struct Pair {
  std::string original, swapped;
};

// Sentences: text split after '.', '!' or '?' (plus closing quotes) followed by whitespace;
// whitespace runs collapse to one space.
std::vector<std::string> split_sentences(const std::string& text) {
  std::vector<std::string> out;
  std::string cur;
  auto flush = [&]() {
    while (!cur.empty() && cur.back() == ' ') cur.pop_back();
    if (!cur.empty()) out.push_back(cur);
    cur.clear();
  };
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      if (!cur.empty() && cur.back() != ' ') cur += ' ';
      continue;
    }
    cur += c;
    if (c == '.' || c == '!' || c == '?') {
      while (i + 1 < text.size() && (text[i + 1] == '"' || text[i + 1] == '\'')) cur += text[++i];
      if (i + 1 >= text.size() || std::isspace(static_cast<unsigned char>(text[i + 1]))) flush();
    }
  }
  flush();
  return out;
}

// Default suite (documented in the README): for each sentence of 5..30 words, in text order, the
// content words are those after the first word whose letters-only core (leading/trailing
// punctuation stripped) is all ASCII letters and at least 4 long. Candidate swaps are the pairs
// (a < b) of content words whose lower-cased cores differ; sentence number i (counting all
// sentences) takes candidate splitmix64(kPairSeed + i) mod #candidates, and the two cores are
// exchanged in place (punctuation stays where it was). Sentences without a candidate are skipped.
std::vector<Pair> default_pairs(const std::string& text, size_t max_pairs) {
  std::vector<Pair> pairs;
  const std::vector<std::string> sentences = split_sentences(text);
  for (size_t si = 0; si < sentences.size() && pairs.size() < max_pairs; ++si) {
    std::vector<std::string> words;
    std::stringstream ss(sentences[si]);
    for (std::string w; ss >> w;) words.push_back(w);
    if (words.size() < 5 || words.size() > 30) continue;
    struct Core {
      size_t word, begin, len;
      std::string lower;
    };
    std::vector<Core> content;
    for (size_t wi = 1; wi < words.size(); ++wi) {
      const std::string& w = words[wi];
      size_t b = 0, e = w.size();
      while (b < e && !std::isalnum(static_cast<unsigned char>(w[b]))) ++b;
      while (e > b && !std::isalnum(static_cast<unsigned char>(w[e - 1]))) --e;
      if (e - b < 4) continue;
      bool alpha = true;
      std::string lower;
      for (size_t k = b; k < e; ++k) {
        alpha = alpha && std::isalpha(static_cast<unsigned char>(w[k]));
        lower += static_cast<char>(std::tolower(static_cast<unsigned char>(w[k])));
      }
      if (alpha) content.push_back({wi, b, e - b, lower});
    }
    std::vector<std::pair<size_t, size_t>> candidates;
    for (size_t a = 0; a < content.size(); ++a)
      for (size_t b = a + 1; b < content.size(); ++b)
        if (content[a].lower != content[b].lower) candidates.emplace_back(a, b);
    if (candidates.empty()) continue;
    const auto [a, b] = candidates[splitmix64(kPairSeed + si) % candidates.size()];
    const Core &ca = content[a], &cb = content[b];
    std::vector<std::string> swapped = words;
    const std::string core_a = words[ca.word].substr(ca.begin, ca.len),
                      core_b = words[cb.word].substr(cb.begin, cb.len);
    swapped[ca.word] = words[ca.word].substr(0, ca.begin) + core_b + words[ca.word].substr(ca.begin + ca.len);
    swapped[cb.word] = words[cb.word].substr(0, cb.begin) + core_a + words[cb.word].substr(cb.begin + cb.len);
    std::string s;
    for (size_t k = 0; k < swapped.size(); ++k) s += (k ? " " : "") + swapped[k];
    pairs.push_back({sentences[si], s});
  }
  return pairs;
}

std::vector<Pair> read_pairs(const std::string& path) {
  std::istringstream f(read_input_text(path));
  std::vector<Pair> out;
  std::string line;
  for (int n = 1; std::getline(f, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    try {
      const json j = json::parse(line);
      out.push_back({j.at("original").get<std::string>(), j.at("swapped").get<std::string>()});
    } catch (const json::exception& e) {
      throw Error(path + ":" + std::to_string(n) +
                  ": expected {\"original\": \"...\", \"swapped\": \"...\"}: " + e.what());
    }
  }
  if (out.empty()) throw Error(path + ": no pairs");
  return out;
}

// Σ log p(token_t | tokens_<t) over t >= 1 of each encoded text (with the tokenizer's specials),
// the texts scored together in one forward step (each weight read once for all of them).
std::vector<double> sentence_logprobs(const Model& m, const std::vector<const std::string*>& texts) {
  const Transformer& eng = m.engine();
  std::vector<Sequence> seqs;
  std::vector<DecodeRequest> reqs;
  seqs.reserve(texts.size());
  for (const std::string* text : texts) {
    std::vector<int32_t> ids = m.encode(*text, true);
    if (ids.size() < 2) throw Error("'" + *text + "' encodes to fewer than 2 tokens");
    seqs.push_back(eng.new_sequence(static_cast<int64_t>(ids.size())));
    reqs.push_back(DecodeRequest{&seqs.back(), std::move(ids), {}, LogitsFor::All});
  }
  const std::vector<ForwardOutput> outs = eng.decode_batch(reqs, PromptRows::Shared);
  std::vector<double> lps;
  for (size_t i = 0; i < reqs.size(); ++i) {
    const std::vector<int32_t>& ids = reqs[i].ids;
    const int64_t V = outs[i].logits.dim(1);
    double lp = 0;
    for (size_t t = 1; t < ids.size(); ++t) lp -= token_nll(outs[i].logits.f32() + (t - 1) * V, V, ids[t]);
    lps.push_back(lp);
  }
  return lps;
}

// ---- probes --------------------------------------------------------------------------------------

// The probe's tokens: the first n of the held-out text, else deterministic pseudo-random ids.
std::vector<int32_t> probe_ids(const std::vector<int32_t>& heldout, int64_t n, int64_t vocab, uint64_t salt) {
  if (static_cast<int64_t>(heldout.size()) >= n)
    return std::vector<int32_t>(heldout.begin(), heldout.begin() + n);
  std::vector<int32_t> ids(n);
  for (int64_t i = 0; i < n; ++i) ids[i] = static_cast<int32_t>(splitmix64(salt * 1000003 + i) % vocab);
  return ids;
}

Tensor bidirectional_hidden(Transformer& eng, const std::vector<int32_t>& ids) {
  struct Restore {
    Transformer& e;
    ~Restore() { e.set_causal(true); }
  } restore{eng};
  eng.set_causal(false);
  Sequence s = eng.new_sequence(static_cast<int64_t>(ids.size()));
  return eng.decode(s, ids, {}, LogitsFor::None).final_hidden;
}

struct Bucket {
  int64_t lo, hi;
};
std::vector<Bucket> distance_buckets(int64_t max_distance) {
  std::vector<Bucket> b = {{0, 0}, {1, 1}, {2, 2}, {3, 3}};
  for (int64_t lo = 4; lo <= std::max<int64_t>(max_distance, 127); lo *= 2) b.push_back({lo, 2 * lo - 1});
  return b;
}
std::string bucket_label(const Bucket& b) {
  return b.lo == b.hi ? std::to_string(b.lo) : std::to_string(b.lo) + "-" + std::to_string(b.hi);
}

// ---- the command ---------------------------------------------------------------------------------

struct Entry {
  std::string label, dir, position;  // position: replacement scheme ("" keeps the model's)
};

struct Method {
  const char* name;
  ScalingType type;
};
std::vector<Method> methods_for(const std::string& scheme) {
  if (scheme == "rope")
    return {{"none", ScalingType::None},
            {"linear", ScalingType::Linear},
            {"ntk", ScalingType::NTK},
            {"dynamic", ScalingType::Dynamic},
            {"yarn", ScalingType::YaRN}};
  if (scheme == "none") return {{"none", ScalingType::None}};
  return {{"none", ScalingType::None}, {"linear", ScalingType::Linear}};
}

const auto& html_escape = xml_escape;

// How every rendering prints a number: integers as they are, floats with the 6 significant digits
// they were stored with (parses back to the identical double).
std::string show(const json& v) {
  if (v.is_null()) return "n/a";
  if (v.is_number_float()) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.6g", v.get<double>());
    return buf;
  }
  return v.is_string() ? v.get<std::string>() : v.dump();
}

// A number cell carrying its JSON pointer; null → "n/a".
std::string cell(const json& doc, const std::string& ptr, const char* tag = "td") {
  const json& v = doc.at(json::json_pointer(ptr));
  if (v.is_null()) return std::string("<") + tag + " class=\"na\">n/a</" + tag + ">";
  return std::string("<") + tag + " data-json=\"" + html_escape(ptr) + "\">" + show(v) + "</" + tag + ">";
}
std::string text_cell(const std::string& s) { return "<td>" + html_escape(s) + "</td>"; }

std::string fmt(const json& v, int width) {
  std::ostringstream os;
  os << std::left << std::setw(width) << show(v) << ' ';
  return os.str();
}

struct CompareCommand : Command {
  std::vector<std::string> dirs, positions;
  std::string zoo, text_file, pairs_file, json_out, html_out,
      backend = "onednn", tasks = "word-order,permutation,length,attention";
  std::string multiples_list;
  bool no_zoo = false, quick = false;
  int64_t max_pairs = 0, ctx_base = 0, probe_tokens = 0, attn_windows = 0, length_tokens = -1;
  int threads = 1;  // the zoo's models are tiny: on a busy machine extra OpenMP threads cost ~20x

  CLI::App* add(CLI::App& app) override {
    CLI::App* c = app.add_subcommand(
        "compare",
        "Position schemes side by side: word order, permutation probe, length, attention by distance");
    c->add_option("-m,--model", dirs,
                  "Extra model directory (repeatable); the zoo is included unless --no-zoo");
    c->add_option("--position", positions,
                  "Ablation (repeatable): for every -m model, also run it with this position scheme")
        ->check(CLI::IsMember(position_scheme_names()));
    c->add_option(
        "--zoo", zoo,
        "Zoo directory (default: ORDO_ZOO_DIR, the installed share/ordo/models/zoo, the source tree's)");
    c->add_flag("--no-zoo", no_zoo, "Only the -m models");
    c->add_option("--text", text_file,
                  "Held-out text for word-order pairs, perplexity and attention (default: ZOO/heldout.txt)")
        ->check(CLI::ExistingFile);
    c->add_option(
         "--pairs", pairs_file,
         "Word-order pairs, JSONL {\"original\": ..., \"swapped\": ...} (default: built from --text)")
        ->check(CLI::ExistingFile);
    c->add_option("--max-pairs", max_pairs, "Pairs built from the text at most (default 200; --quick 8)");
    c->add_option("--multiples", multiples_list,
                  "Context lengths as multiples of the trained length (default 1,2,4,8,16; --quick 1,2)");
    c->add_option("--ctx-base", ctx_base,
                  "Length the multiples multiply (default: each model's trained length)");
    c->add_option("--probe-tokens", probe_tokens,
                  "Tokens in the permutation probe (default min(64, trained); --quick 16)");
    c->add_option("--attn-windows", attn_windows,
                  "Windows of trained length for attention by distance (default 4; --quick 1)");
    c->add_option("--length-tokens", length_tokens,
                  "Held-out tokens the length probe scores at most (0: all; default all, --quick 4 x the "
                  "longest context)");
    c->add_option("--tasks", tasks,
                  "Probes to run, comma-separated: word-order, permutation, length, attention")
        ->capture_default_str();
    c->add_flag("--quick", quick, "Small settings for smoke tests");
    c->add_option("--json", json_out, "Write the results as JSON");
    c->add_option("--html", html_out, "Write a self-contained HTML report (SVG charts, the JSON embedded)");
    c->add_option("--backend", backend, "GEMM backend: openblas or onednn")
        ->capture_default_str()
        ->check(CLI::IsMember({"openblas", "onednn"}, CLI::ignore_case));
    c->add_option("--threads", threads, "Threads (0: all cores; default 1, best for small models)")
        ->capture_default_str();
    return c;
  }

  std::string zoo_dir() const {
    if (!zoo.empty()) return zoo;
    if (const char* env = std::getenv("ORDO_ZOO_DIR")) return env;
    std::error_code ec;
    fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (!ec) {
      fs::path installed = exe.parent_path().parent_path() / "share/ordo/models/zoo";
      if (fs::exists(installed)) return installed.string();
    }
    return ORDO_ZOO_DIR;
  }

  bool want(const std::string& task) const {
    return ("," + tasks + ",").find("," + task + ",") != std::string::npos;
  }

  void validate() const override { check_flag_range("--threads", threads, 0, kMaxThreads); }

  int run() override {
    validate();
    for (std::stringstream ss(tasks); ss.good();) {
      std::string t;
      std::getline(ss, t, ',');
      if (!t.empty() && t != "word-order" && t != "permutation" && t != "length" && t != "attention")
        throw Error("--tasks: unknown probe '" + t + "' (word-order, permutation, length, attention)");
    }
    if (!positions.empty() && dirs.empty())
      throw Error("--position makes ablations of -m models: give -m DIR");
    std::vector<int64_t> multiples;
    for (int32_t v : parse_ids(!multiples_list.empty() ? multiples_list : quick ? "1,2" : "1,2,4,8,16")) {
      if (v < 1) throw Error("--multiples: " + std::to_string(v) + " is not a positive integer");
      multiples.push_back(v);
    }
    if (max_pairs <= 0) max_pairs = quick ? 8 : 200;
    if (attn_windows <= 0) attn_windows = quick ? 1 : 4;
    if (length_tokens < 0) length_tokens = quick ? -4 : 0;  // negative: that many times the longest context
    const bool tty = isatty(STDERR_FILENO);

    // Models.
    std::vector<Entry> entries;
    std::string zdir;
    if (!no_zoo) {
      zdir = zoo_dir();
      for (const char* s : kZooSchemes) {
        const fs::path d = fs::path(zdir) / s;
        if (fs::exists(d / "config.json"))
          entries.push_back({s, d.string(), ""});
        else
          std::cerr << "compare: zoo model " << d.string() << " not found, skipped\n";
      }
      if (entries.empty() && dirs.empty())
        throw Error("no zoo models under " + zdir +
                    " (set --zoo or ORDO_ZOO_DIR, or give -m DIR with --no-zoo)");
    }
    for (const std::string& d : dirs) {
      std::string base = fs::path(d).lexically_normal().filename().string();
      if (base.empty()) base = fs::path(d).lexically_normal().parent_path().filename().string();
      const std::string name = base;
      // A zoo member given again with -m is not run twice (its ablations are still added).
      bool listed = false;
      std::error_code ec1, ec2;
      for (const Entry& e : entries)
        listed = listed || fs::weakly_canonical(e.dir, ec1) == fs::weakly_canonical(d, ec2);
      if (!listed) {
        for (int n = 2;
             std::any_of(entries.begin(), entries.end(), [&](const Entry& e) { return e.label == base; });
             ++n)
          base = name + "-" + std::to_string(n);
        entries.push_back({base, d, ""});
      }
      for (const std::string& p : positions) entries.push_back({base + "[pos=" + p + "]", d, p});
    }
    if (entries.empty()) throw Error("no models to compare");

    // Text and pairs.
    if (text_file.empty() && !zdir.empty() && fs::exists(fs::path(zdir) / "heldout.txt"))
      text_file = (fs::path(zdir) / "heldout.txt").string();
    const std::string text = text_file.empty() ? std::string() : read_input_text(text_file);
    std::vector<Pair> pairs;
    std::string pairs_source;
    if (!pairs_file.empty()) {
      pairs = read_pairs(pairs_file);
      pairs_source = pairs_file;
    } else if (!text.empty()) {
      pairs = default_pairs(text, static_cast<size_t>(max_pairs));
      pairs_source = "built from " + text_file;
    }

    json doc;
    doc["tool"] = "ordo compare";
    doc["format"] = 1;
    doc["settings"] = {{"text", text_file},
                       {"pairs_source", pairs_source},
                       {"max_pairs", max_pairs},
                       {"multiples", multiples},
                       {"ctx_base", ctx_base},
                       {"attention_windows", attn_windows},
                       {"length_tokens", length_tokens},
                       {"pair_seed", kPairSeed},
                       {"permutation_seed", kPermutationSeed},
                       {"quick", quick},
                       {"tasks", tasks}};
    doc["models"] = json::array();
    json wo = json::array(), perm = json::array(), len = json::array(), attn = json::array();
    json pair_list = json::array();
    for (const Pair& p : pairs) pair_list.push_back({{"original", p.original}, {"swapped", p.swapped}});
    std::vector<Bucket> buckets;

    for (const Entry& e : entries) {
      std::cerr << "[" << e.label << "] loading " << e.dir
                << (e.position.empty() ? "" : " with --position " + e.position) << "\n";
      ModelOptions o;
      o.backend = parse_backend(backend);
      o.threads = threads;
      o.position = e.position;
      std::string tok_error;
      std::optional<Model> loaded;
      try {
        loaded.emplace(Model::load(e.dir, o));
      } catch (const Error& err) {
        o.load_tokenizer = false;
        loaded.emplace(Model::load(e.dir, o));
        tok_error = err.what();
      }
      Model& m = *loaded;
      Transformer& eng = m.engine();
      const PositionConfig pc0 = eng.spec().position;
      const std::string scheme = pc0.scheme;
      const int64_t trained = pc0.max_positions > 0 ? pc0.max_positions : 128;
      const int64_t base = ctx_base > 0 ? ctx_base : trained;
      std::vector<int32_t> heldout;
      if (m.has_tokenizer() && !text.empty()) heldout = m.encode(text, false);
      doc["models"].push_back({{"label", e.label},
                               {"dir", e.dir},
                               {"scheme", scheme},
                               {"position_override", e.position},
                               {"family", m.family()},
                               {"trained_length", trained},
                               {"ctx_base", base},
                               {"heldout_tokens", heldout.size()},
                               {"tokenizer", m.has_tokenizer()}});

      // 1. Word order.
      if (want("word-order")) {
        json r = {{"model", e.label}, {"scheme", scheme}};
        if (!m.has_tokenizer()) {
          r["error"] = "no tokenizer: " + tok_error;
        } else if (pairs.empty()) {
          r["error"] = "no pairs (give --text or --pairs)";
        } else {
          std::cerr << "[" << e.label << "] word order: " << pairs.size() << " pairs\n";
          int64_t wins = 0, ties = 0;
          double margin = 0;
          try {
            constexpr size_t kPairsPerStep = 8;  // 16 sentences per forward step
            for (size_t i0 = 0; i0 < pairs.size(); i0 += kPairsPerStep) {
              const size_t n = std::min(kPairsPerStep, pairs.size() - i0);
              if (tty)
                std::cerr << "\r[" << e.label << "] word order " << i0 + n << "/" << pairs.size()
                          << std::flush;
              std::vector<const std::string*> texts;
              for (size_t i = i0; i < i0 + n; ++i)
                texts.insert(texts.end(), {&pairs[i].original, &pairs[i].swapped});
              const std::vector<double> lp = sentence_logprobs(m, texts);
              for (size_t i = 0; i < n; ++i) {
                const double d = lp[2 * i] - lp[2 * i + 1];
                margin += d;
                if (d > 0)
                  ++wins;
                else if (d == 0)
                  ++ties;
              }
            }
            if (tty) std::cerr << "\r\033[K";
            const double n = static_cast<double>(pairs.size());
            r["pairs"] = pairs.size();
            r["wins"] = wins;
            r["ties"] = ties;
            r["accuracy"] = r6((static_cast<double>(wins) + 0.5 * static_cast<double>(ties)) / n);
            r["mean_margin"] = r6(margin / n);
          } catch (const Error& err) {  // e.g. a sentence longer than a learned table
            if (tty) std::cerr << "\r\033[K";
            r["error"] = err.what();
            std::cerr << "[" << e.label << "] word order: " << err.what() << "\n";
          }
        }
        wo.push_back(r);
      }

      // 2. Permutation probe: bidirectional stack on ids and on a fixed permutation of them.
      if (want("permutation")) {
        const int64_t P = probe_tokens > 0 ? probe_tokens
                          : quick          ? std::min<int64_t>(16, trained)
                                           : std::min<int64_t>(64, trained);
        json r = {{"model", e.label}, {"scheme", scheme}, {"tokens", P}};
        try {
          const std::vector<int32_t> ids = probe_ids(heldout, P, eng.spec().vocab_size, 1);
          std::vector<int64_t> perm_idx(P);
          for (int64_t i = 0; i < P; ++i) perm_idx[i] = i;
          for (int64_t i = P - 1; i > 0; --i)
            std::swap(perm_idx[i], perm_idx[splitmix64(kPermutationSeed + i) % (i + 1)]);
          std::vector<int32_t> pids(P);
          for (int64_t i = 0; i < P; ++i) pids[i] = ids[perm_idx[i]];
          const Tensor h = bidirectional_hidden(eng, ids), hp = bidirectional_hidden(eng, pids);
          const int64_t d = h.dim(1);
          double err = 0, mag = 0;
          for (int64_t i = 0; i < P; ++i)
            for (int64_t c = 0; c < d; ++c) {
              const double a = hp.f32()[i * d + c], b = h.f32()[perm_idx[i] * d + c];
              err = std::max(err, std::fabs(a - b));
              mag = std::max(mag, std::fabs(b));
            }
          r["max_abs_error"] = r6(err);
          r["max_abs_hidden"] = r6(mag);
          r["rel_error"] = r6(mag > 0 ? err / mag : 0.0);
        } catch (const Error& err) {
          r["error"] = err.what();
        }
        perm.push_back(r);
      }

      // 3. Length: perplexity at multiples of the trained length, per long-context method.
      if (want("length")) {
        int64_t max_ctx = 0;
        for (int64_t k : multiples)
          if (base * k <= static_cast<int64_t>(heldout.size())) max_ctx = std::max(max_ctx, base * k);
        std::vector<int32_t> ids = heldout;
        const int64_t cap = length_tokens < 0 ? -length_tokens * max_ctx : length_tokens;
        if (cap > 0 && static_cast<int64_t>(ids.size()) > cap) ids.resize(cap);
        if (max_ctx > 0) ids.resize(ids.size() / max_ctx * max_ctx);  // the same tokens at every length
        for (const Method& meth : methods_for(scheme)) {
          const std::string label = std::string(meth.name) == "none" ? e.label : e.label + "+" + meth.name;
          json row = {{"model", e.label},
                      {"scheme", scheme},
                      {"method", meth.name},
                      {"label", label},
                      {"points", json::array()}};
          std::cerr << "[" << e.label << "] length: " << label << " on " << ids.size() << " tokens\n";
          for (int64_t k : multiples) {
            const int64_t ctx = base * k;
            // factor: context / trained length (= the multiple unless --ctx-base moves the base)
            const double factor = std::max(1.0, static_cast<double>(ctx) / static_cast<double>(trained));
            json pt = {
                {"multiple", k}, {"ctx", ctx}, {"factor", meth.type == ScalingType::None ? 1.0 : r6(factor)}};
            try {
              if (!m.has_tokenizer()) throw Error("no tokenizer: " + tok_error);
              if (ctx > static_cast<int64_t>(ids.size()))
                throw Error("the held-out text has " + std::to_string(heldout.size()) +
                            " tokens, fewer than " + std::to_string(ctx));
              PositionConfig pc = pc0;
              pc.scaling = Scaling{};
              pc.scaling.type = meth.type;
              if (meth.type != ScalingType::None) pc.scaling.factor = factor;
              eng.set_position(pc);
              const PerplexityResult pr = perplexity(
                  eng, ids, ctx, 0,
                  [&](int64_t done, int64_t total) {
                    if (tty)
                      std::cerr << "\r[" << label << "] " << k << "x (" << ctx << " tokens): window " << done
                                << "/" << total << std::flush;
                  },
                  4);
              if (tty) std::cerr << "\r\033[K";
              pt["windows"] = pr.windows;
              pt["tokens"] = pr.tokens;
              pt["ppl"] = num_or_null(pr.ppl());
            } catch (const Error& err) {
              if (tty) std::cerr << "\r\033[K";
              pt["windows"] = 0;
              pt["tokens"] = 0;
              pt["ppl"] = nullptr;
              pt["error"] = err.what();
            }
            row["points"].push_back(pt);
          }
          eng.set_position(pc0);
          len.push_back(row);
        }
      }

      // 4. Attention weight against query-key distance (all layers, heads and queries).
      if (want("attention")) {
        std::vector<Bucket> bk = distance_buckets(base - 1);
        if (bk.size() > buckets.size()) buckets = bk;
        std::vector<int64_t> of(base);
        for (size_t b = 0; b < bk.size(); ++b)
          for (int64_t dd = bk[b].lo; dd <= bk[b].hi && dd < base; ++dd) of[dd] = static_cast<int64_t>(b);
        std::vector<double> sum(bk.size(), 0.0);
        std::vector<int64_t> pairs_n(bk.size(), 0);
        int64_t rows = 0;
        eng.set_attention_observer([&](int64_t, int64_t, int64_t q, const float* p, int64_t nk) {
          ++rows;
          for (int64_t j = 0; j < nk && j <= q; ++j) {
            const int64_t b = of[std::min<int64_t>(q - j, base - 1)];
            sum[b] += p[j];
            ++pairs_n[b];
          }
        });
        std::cerr << "[" << e.label << "] attention by distance: " << attn_windows << " window(s) of " << base
                  << "\n";
        std::string attn_error;
        for (int64_t w = 0; w < attn_windows && attn_error.empty(); ++w) {
          std::vector<int32_t> ids;
          if (static_cast<int64_t>(heldout.size()) >= (w + 1) * base)
            ids.assign(heldout.begin() + w * base, heldout.begin() + (w + 1) * base);
          else
            ids = probe_ids({}, base, eng.spec().vocab_size, 100 + w);
          if (tty)
            std::cerr << "\r[" << e.label << "] attention window " << w + 1 << "/" << attn_windows
                      << std::flush;
          try {
            Sequence s = eng.new_sequence(base);
            eng.decode(s, ids, {}, LogitsFor::None);
          } catch (const Error& err) {  // e.g. --ctx-base beyond a learned table
            attn_error = err.what();
            std::cerr << "[" << e.label << "] attention by distance: " << attn_error << "\n";
          }
        }
        if (tty) std::cerr << "\r\033[K";
        eng.set_attention_observer(nullptr);
        json mean = json::array(), mass = json::array();
        for (size_t b = 0; b < bk.size(); ++b) {
          const bool ok = attn_error.empty() && pairs_n[b] > 0;
          mean.push_back(ok ? json(r6(sum[b] / static_cast<double>(pairs_n[b]))) : json(nullptr));
          mass.push_back(ok ? json(r6(sum[b] / static_cast<double>(rows))) : json(nullptr));
        }
        json ar = {{"model", e.label},
                   {"scheme", scheme},
                   {"rows", attn_error.empty() ? rows : 0},
                   {"mean_weight", mean},
                   {"mass", mass}};
        if (!attn_error.empty()) ar["error"] = attn_error;
        attn.push_back(ar);
      }
    }
    // Every model's bucket list is a prefix of the longest: pad the shorter ones with n/a.
    for (json& r : attn)
      for (const char* key : {"mean_weight", "mass"})
        while (r[key].size() < buckets.size()) r[key].push_back(nullptr);
    json jb = json::array();
    for (const Bucket& b : buckets) jb.push_back({{"lo", b.lo}, {"hi", b.hi}, {"label", bucket_label(b)}});

    if (want("word-order")) doc["word_order"] = {{"pairs", pair_list}, {"results", wo}};
    if (want("permutation")) doc["permutation"] = {{"results", perm}};
    if (want("length")) doc["length"] = {{"results", len}};
    if (want("attention")) doc["attention"] = {{"buckets", jb}, {"results", attn}};

    print_table(doc);
    if (!json_out.empty()) {
      std::ofstream f(json_out);
      if (!f) throw Error(json_out + ": cannot open for writing");
      f << doc.dump(2) << "\n";
    }
    if (!html_out.empty()) {
      std::ofstream f(html_out);
      if (!f) throw Error(html_out + ": cannot open for writing");
      f << render_html(doc);
    }
    return 0;
  }

  static void print_table(const json& doc) {
    std::ostream& o = std::cout;
    int lw = 12, rw = 12;  // label column widths: models, length rows
    for (const json& mm : doc["models"])
      lw = std::max(lw, static_cast<int>(mm["label"].get<std::string>().size()) + 2);
    if (doc.contains("length"))
      for (const json& r : doc["length"]["results"])
        rw = std::max(rw, static_cast<int>(r["label"].get<std::string>().size()) + 2);
    if (doc.contains("word_order")) {
      o << "== word order: prefers the original over two words swapped (" << doc["word_order"]["pairs"].size()
        << " pairs)\n"
        << fmt("model", lw) << fmt("scheme", 12) << fmt("accuracy", 10) << fmt("margin", 12) << "\n";
      for (const json& r : doc["word_order"]["results"])
        o << fmt(r["model"], lw) << fmt(r["scheme"], 12) << fmt(r.value("accuracy", json()), 10)
          << fmt(r.value("mean_margin", json()), 12)
          << (r.contains("error") ? r["error"].get<std::string>() : "") << "\n";
    }
    if (doc.contains("permutation")) {
      o << "\n== permutation probe: bidirectional, max |h(perm x) - perm h(x)|\n"
        << fmt("model", lw) << fmt("scheme", 12) << fmt("tokens", 8) << fmt("max_abs", 14)
        << fmt("relative", 14) << "\n";
      for (const json& r : doc["permutation"]["results"])
        o << fmt(r["model"], lw) << fmt(r["scheme"], 12) << fmt(r["tokens"], 8)
          << fmt(r.value("max_abs_error", json()), 14) << fmt(r.value("rel_error", json()), 14)
          << (r.contains("error") ? r["error"].get<std::string>() : "") << "\n";
    }
    if (doc.contains("length")) {
      o << "\n== length: perplexity at multiples of the trained length\n" << fmt("row", rw);
      for (const json& k : doc["settings"]["multiples"]) o << fmt(k.dump() + "x", 11);
      o << "\n";
      for (const json& r : doc["length"]["results"]) {
        o << fmt(r["label"], rw);
        for (const json& p : r["points"]) o << fmt(p["ppl"], 11);
        o << "\n";
      }
    }
    if (doc.contains("attention")) {
      o << "\n== attention: mean weight by query-key distance\n" << fmt("model", lw);
      for (const json& b : doc["attention"]["buckets"]) o << fmt(b["label"], 11);
      o << "\n";
      for (const json& r : doc["attention"]["results"]) {
        o << fmt(r["model"], lw);
        for (const json& v : r["mean_weight"]) o << fmt(v, 11);
        o << "\n";
      }
    }
    o << std::flush;
  }

  static std::string render_html(const json& doc) {
    std::ostringstream h;
    h << "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>ordo compare</title>\n<style>"
         "body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em}"
         "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:3px "
         "8px;text-align:right}"
         "td:first-child,th:first-child{text-align:left}.na{color:#999}.err{color:#a33;text-align:left;font-"
         "size:smaller}"
         "</style></head><body>\n<h1>ordo compare</h1>\n";
    // Settings and models.
    h << "<h2>Settings</h2>\n<table>";
    h << "<tr><th>format</th>" << cell(doc, "/format") << "</tr>";
    for (auto it = doc["settings"].begin(); it != doc["settings"].end(); ++it) {
      const std::string ptr = "/settings/" + it.key();
      h << "<tr><th>" << html_escape(it.key()) << "</th>";
      if (it->is_number()) {
        h << cell(doc, ptr);
      } else if (it->is_array()) {
        h << "<td>";
        for (size_t i = 0; i < it->size(); ++i)
          h << (i ? ", " : "") << cell(doc, ptr + "/" + std::to_string(i), "span");
        h << "</td>";
      } else {
        h << text_cell(it->is_string() ? it->get<std::string>() : it->dump());
      }
      h << "</tr>";
    }
    h << "</table>\n<h2>Models</h2>\n<table><tr><th>model</th><th>dir</th><th>family</th><th>scheme</th>"
         "<th>trained length</th><th>length base</th><th>held-out tokens</th></tr>\n";
    for (size_t i = 0; i < doc["models"].size(); ++i) {
      const json& mm = doc["models"][i];
      const std::string p = "/models/" + std::to_string(i);
      h << "<tr>" << text_cell(mm["label"].get<std::string>()) << text_cell(mm["dir"].get<std::string>())
        << text_cell(mm["family"].get<std::string>())
        << text_cell(mm["scheme"].get<std::string>() +
                     (mm["position_override"].get<std::string>().empty() ? "" : " (replaced)"))
        << cell(doc, p + "/trained_length") << cell(doc, p + "/ctx_base") << cell(doc, p + "/heldout_tokens")
        << "</tr>\n";
    }
    h << "</table>\n";
    auto err_cell = [](const json& r) {
      return std::string("<td class=\"err\">") +
             (r.contains("error") ? html_escape(r["error"].get<std::string>()) : "") + "</td>";
    };
    if (doc.contains("word_order")) {
      const json& wo = doc["word_order"];
      h << "<h2>Word order</h2>\n<p>Each pair differs only in the order of two words; a model is right when "
           "the "
           "original has the higher total log-probability (ties count half). Margin: mean log-prob(original) "
           "− "
           "log-prob(swapped), "
           "nats.</p>\n<table><tr><th>model</th><th>scheme</th><th>pairs</th><th>wins</th><th>ties</th>"
           "<th>accuracy</th><th>mean margin</th><th></th></tr>\n";
      std::vector<std::string> labels;
      std::vector<double> acc;
      for (size_t i = 0; i < wo["results"].size(); ++i) {
        const json& r = wo["results"][i];
        const std::string p = "/word_order/results/" + std::to_string(i);
        labels.push_back(r["model"].get<std::string>());
        h << "<tr>" << text_cell(r["model"].get<std::string>()) << text_cell(r["scheme"].get<std::string>());
        if (r.contains("accuracy")) {
          h << cell(doc, p + "/pairs") << cell(doc, p + "/wins") << cell(doc, p + "/ties")
            << cell(doc, p + "/accuracy") << cell(doc, p + "/mean_margin");
          acc.push_back(r["accuracy"].get<double>());
        } else {
          h << "<td class=\"na\" colspan=\"5\">n/a</td>";
          acc.push_back(NAN);
        }
        h << err_cell(r) << "</tr>\n";
      }
      h << "</table>\n";
      ChartOptions co;
      co.title = "word order: accuracy (0.5 = chance)";
      co.x_label = "accuracy";
      h << svg_bar_chart(labels, acc, co);
      h << "<details><summary>the " << wo["pairs"].size()
        << " pairs</summary><table><tr><th>original</th><th>swapped</th></tr>";
      for (const json& p : wo["pairs"])
        h << "<tr>" << text_cell(p["original"].get<std::string>())
          << text_cell(p["swapped"].get<std::string>()) << "</tr>";
      h << "</table></details>\n";
    }
    if (doc.contains("permutation")) {
      h << "<h2>Permutation probe</h2>\n<p>The stack run bidirectionally (no causal mask) on a token "
           "sequence and on a "
           "fixed permutation of it; error = max |h(perm x) − perm h(x)| over the final hidden states, "
           "relative = error "
           "/ max |h|. Without positions attention is permutation-equivariant, so the error is rounding "
           "only.</p>\n"
           "<table><tr><th>model</th><th>scheme</th><th>tokens</th><th>max abs error</th><th>relative</th>"
           "<th>max |h|</th><th></th></tr>\n";
      std::vector<std::string> labels;
      std::vector<double> errs;
      for (size_t i = 0; i < doc["permutation"]["results"].size(); ++i) {
        const json& r = doc["permutation"]["results"][i];
        const std::string p = "/permutation/results/" + std::to_string(i);
        labels.push_back(r["model"].get<std::string>());
        h << "<tr>" << text_cell(r["model"].get<std::string>()) << text_cell(r["scheme"].get<std::string>())
          << cell(doc, p + "/tokens");
        if (r.contains("max_abs_error")) {
          h << cell(doc, p + "/max_abs_error") << cell(doc, p + "/rel_error")
            << cell(doc, p + "/max_abs_hidden");
          errs.push_back(r["rel_error"].get<double>());
        } else {
          h << "<td class=\"na\" colspan=\"3\">n/a</td>";
          errs.push_back(NAN);
        }
        h << err_cell(r) << "</tr>\n";
      }
      h << "</table>\n";
      ChartOptions co;
      co.title = "permutation probe: relative error (log scale)";
      co.x_label = "max |h(perm x) − perm h(x)| / max |h|";
      co.log_x = true;
      h << svg_bar_chart(labels, errs, co);
    }
    if (doc.contains("length")) {
      const json& multiples = doc["settings"]["multiples"];
      h << "<h2>Length</h2>\n<p>Perplexity of the held-out text in non-overlapping windows of k × the "
           "trained length "
           "(the text is cut to a whole number of the longest windows, so every length scores the same "
           "tokens). Rows "
           "with a method apply that long-context scaling with factor k; n/a rows show "
           "why.</p>\n<table><tr><th>row</th>";
      for (size_t j = 0; j < multiples.size(); ++j)
        h << cell(doc, "/settings/multiples/" + std::to_string(j), "th");
      h << "</tr>\n";
      std::vector<Series> plain, scaled;
      for (size_t i = 0; i < doc["length"]["results"].size(); ++i) {
        const json& r = doc["length"]["results"][i];
        const std::string p = "/length/results/" + std::to_string(i);
        Series s;
        s.name = r["label"].get<std::string>();
        h << "<tr>" << text_cell(r["label"].get<std::string>());
        for (size_t j = 0; j < r["points"].size(); ++j) {
          const json& pt = r["points"][j];
          h << cell(doc, p + "/points/" + std::to_string(j) + "/ppl");
          s.x.push_back(pt["ctx"].get<double>());
          s.y.push_back(pt["ppl"].is_null() ? NAN : pt["ppl"].get<double>());
        }
        h << "</tr>\n";
        (r["method"] == "none" ? plain : scaled).push_back(s);
      }
      h << "</table>\n";
      ChartOptions co;
      co.x_label = "context length (tokens)";
      co.y_label = "perplexity";
      co.log_x = co.log_y = true;
      co.title = "perplexity vs context length, no scaling";
      h << svg_line_chart(plain, co);
      if (!scaled.empty()) {
        co.title = "perplexity vs context length, with long-context scaling (factor = multiple)";
        h << svg_line_chart(scaled, co);
      }
      h << "<details><summary>every window "
           "setting</summary><table><tr><th>row</th><th>multiple</th><th>ctx</th>"
           "<th>factor</th><th>windows</th><th>tokens</th><th>ppl</th><th></th></tr>\n";
      for (size_t i = 0; i < doc["length"]["results"].size(); ++i) {
        const json& r = doc["length"]["results"][i];
        for (size_t j = 0; j < r["points"].size(); ++j) {
          const std::string p = "/length/results/" + std::to_string(i) + "/points/" + std::to_string(j);
          h << "<tr>" << text_cell(r["label"].get<std::string>()) << cell(doc, p + "/multiple")
            << cell(doc, p + "/ctx") << cell(doc, p + "/factor") << cell(doc, p + "/windows")
            << cell(doc, p + "/tokens") << cell(doc, p + "/ppl") << err_cell(r["points"][j]) << "</tr>\n";
        }
      }
      h << "</table></details>\n";
    }
    if (doc.contains("attention")) {
      const json& a = doc["attention"];
      h << "<h2>Attention by distance</h2>\n<p>Attention probabilities on windows of the trained length, "
           "over all "
           "layers, heads and queries, grouped by query−key distance. Mean weight: average probability of "
           "one key at "
           "that distance; mass: average share of a query's attention that falls in the bucket.</p>\n";
      for (const char* key : {"mean_weight", "mass"}) {
        h << "<table><tr><th>" << key << "</th><th>rows</th>";
        for (size_t b = 0; b < a["buckets"].size(); ++b) {
          const std::string p = "/attention/buckets/" + std::to_string(b);
          h << "<th>" << cell(doc, p + "/lo", "span") << "–" << cell(doc, p + "/hi", "span") << "</th>";
        }
        h << "</tr>\n";
        for (size_t i = 0; i < a["results"].size(); ++i) {
          const std::string p = "/attention/results/" + std::to_string(i);
          h << "<tr>" << text_cell(a["results"][i]["model"].get<std::string>()) << cell(doc, p + "/rows");
          for (size_t b = 0; b < a["results"][i][key].size(); ++b)
            h << cell(doc, p + "/" + key + "/" + std::to_string(b));
          h << "</tr>\n";
        }
        h << "</table>\n";
      }
      std::vector<Series> series;
      for (const json& r : a["results"]) {
        Series s;
        s.name = r["model"].get<std::string>();
        for (size_t b = 0; b < a["buckets"].size(); ++b) {
          s.x.push_back(a["buckets"][b]["lo"].get<double>() + 1.0);
          s.y.push_back(r["mean_weight"][b].is_null() ? NAN : r["mean_weight"][b].get<double>());
        }
        series.push_back(s);
      }
      ChartOptions co;
      co.title = "mean attention weight vs query-key distance";
      co.x_label = "distance + 1 (bucket start)";
      co.y_label = "mean attention weight";
      co.log_x = co.log_y = true;
      h << svg_line_chart(series, co);
    }
    std::string embedded = doc.dump();
    for (size_t at = 0; (at = embedded.find("</", at)) != std::string::npos; at += 3)
      embedded.replace(at, 2, "<\\/");
    h << "<script type=\"application/json\" id=\"ordo-compare-results\">" << embedded
      << "</script>\n</body></html>\n";
    return h.str();
  }
};

}  // namespace

std::unique_ptr<Command> make_compare() { return std::make_unique<CompareCommand>(); }

}  // namespace ordo::cli
