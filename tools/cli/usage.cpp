// Usage errors in a user's words (see usage.hpp).
#include "usage.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

namespace fs = std::filesystem;

namespace ordo::cli {

namespace {

// Optimal string alignment distance: insertions, deletions, substitutions and swaps of two
// neighbouring letters ("maen" is one edit from "mean").
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

// Every name of the options of `app` (long and short, with their dashes), hidden ones too.
std::vector<std::string> flag_names(const CLI::App* app) {
  std::vector<std::string> names;
  for (const CLI::Option* o : app->get_options()) {
    for (const std::string& l : o->get_lnames()) names.push_back("--" + l);
    for (const std::string& s : o->get_snames()) names.push_back("-" + s);
  }
  return names;
}

const CLI::App* selected(const CLI::App& app) {
  for (const CLI::App* s : app.get_subcommands({}))
    if (s->parsed()) return s;
  return &app;
}

}  // namespace

std::string nearest(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_d = std::string::npos;
  for (const std::string& c : candidates) {
    const size_t d = edit_distance(word, c);
    if (d < best_d) best_d = d, best = c;
  }
  // A typo: a third of the word at most (at least 1, at most 3 edits), or the word a prefix of it.
  const size_t limit = std::clamp<size_t>(word.size() / 3, 1, 3);
  if (best_d <= limit) return best;
  for (const std::string& c : candidates)
    if (word.size() >= 3 && c.compare(0, word.size(), word) == 0) return c;
  return "";
}

std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates) {
  const std::string n = nearest(word, candidates);
  return n.empty() ? "" : " (did you mean " + n + "?)";
}

std::vector<int64_t> parse_int_list(const std::string& flag, const std::string& text) {
  std::vector<int64_t> out;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (item.empty()) throw UsageError(flag + ": '" + text + "' has an empty entry (give numbers like 512,1024)");
    char* end = nullptr;
    errno = 0;
    const long long v = std::strtoll(item.c_str(), &end, 10);
    if (*end != '\0' || errno != 0)
      throw UsageError(flag + ": '" + item + "' is not a whole number (give numbers like 512,1024)");
    out.push_back(v);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

void check_position_name(const std::string& flag, const std::string& name) {
  const std::vector<std::string> known = position_scheme_names();
  if (std::find(known.begin(), known.end(), name) != known.end()) return;
  throw UsageError(flag + ": unknown position scheme '" + name + "'" + did_you_mean(name, known) +
                   "; known: " + join(known));
}

void check_scaling_name(const std::string& flag, const std::string& name) {
  const std::vector<std::string> known = {"none", "linear", "ntk", "dynamic", "yarn", "llama3", "longrope"};
  if (std::find(known.begin(), known.end(), name) != known.end()) return;
  throw UsageError(flag + ": unknown scaling '" + name + "'" + did_you_mean(name, known) + "; known: " + join(known));
}

namespace {

// A regular file starting with GGUF's magic (read without blocking on a FIFO).
bool is_gguf(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return false;
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  return in.read(magic, 4) && std::string(magic, 4) == "GGUF";
}

}  // namespace

void check_model_dir(const std::string& flag, const std::string& dir, bool need_config) {
  std::error_code ec;
  const fs::path d(dir);
  const fs::file_status st = fs::status(d, ec);
  if (!fs::exists(st)) throw Error(flag + " " + dir + ": no such file or directory");
  if (!fs::is_directory(st)) {
    if (is_gguf(dir)) return;  // a GGUF file holds the whole model
    std::string parent = d.parent_path().string();
    if (parent.empty()) parent = ".";
    throw Error(flag + " " + dir + " is a file; " + flag + " takes the directory that holds it: " + parent);
  }
  if (!need_config || fs::exists(d / "config.json", ec)) return;
  std::vector<std::string> held;
  for (fs::directory_iterator it(d, ec), end; !ec && it != end; it.increment(ec))
    held.push_back(it->path().filename().string() + (it->is_directory(ec) ? "/" : ""));
  std::sort(held.begin(), held.end());
  const bool tokenizer = std::any_of(held.begin(), held.end(), [](const std::string& f) {
    return f == "tokenizer.json" || f == "tokenizer.model" || f == "vocab.txt" || f == "tokenizer_config.json";
  });
  std::string listing;
  for (size_t i = 0; i < held.size() && i < 8; ++i) listing += (i ? ", " : "") + held[i];
  if (held.size() > 8) listing += ", ... (" + std::to_string(held.size()) + " entries)";
  if (tokenizer)
    throw Error(flag + " " + dir + " holds a tokenizer but no model (no config.json; it has " + listing +
                "): give the directory with config.json and the weights");
  throw Error(flag + " " + dir + " is not a model directory: no config.json" +
              (held.empty() ? std::string(" (it is empty)") : " (it holds " + listing + ")"));
}

std::string usage_message(CLI::App& app, const CLI::ParseError& e) {
  const CLI::App* sub = selected(app);
  const std::string msg = e.what();
  std::smatch m;
  static const std::regex conversion("Could not convert: (\\S+) = (.*)");
  if (std::regex_match(msg, m, conversion)) {
    std::string kind = "a number";
    try {
      const CLI::Option* o = sub->get_option(m[1].str());
      const std::string t = o->get_type_name();
      if (t == "INT" || t == "UINT") kind = "a whole number";
    } catch (const CLI::Error&) {
    }
    return m[1].str() + ": '" + m[2].str() + "' is not " + kind;
  }
  static const std::regex member("(\\S+): (.*) not in \\{(.*)\\}");
  if (std::regex_match(msg, m, member)) {
    std::vector<std::string> known;
    std::istringstream in(m[3].str());
    for (std::string k; std::getline(in, k, ',');) known.push_back(k);
    return m[1].str() + ": '" + m[2].str() + "' is not one of " + join(known) + did_you_mean(m[2].str(), known);
  }
  static const std::regex extras("The following arguments? (were|was) not expected: (.*)");
  if (std::regex_match(msg, m, extras)) {
    // CLI11 lists the unknown words last first: the first flag given among them, else the first word.
    std::vector<std::string> words;
    std::istringstream in(m[2].str());
    for (std::string w; in >> w;) words.push_back(w);
    std::string word = words.empty() ? std::string() : words.back();
    for (const std::string& w : words)
      if (w.size() > 1 && w[0] == '-') word = w;
    const std::string where = sub == &app ? "ordo" : "ordo " + sub->get_name();
    if (!word.empty() && word[0] == '-') {
      const std::string flag = word.substr(0, word.find('='));
      return where + ": unknown flag " + flag + did_you_mean(flag, flag_names(sub)) + "; see " + where + " --help";
    }
    return where + ": unexpected argument '" + word + "' (quote a text with spaces); see " + where + " --help";
  }
  return msg;
}

std::vector<std::string> rewrite_args(const CLI::App& app, int argc, const char* const* argv) {
  std::vector<std::string> args(argv, argv + argc);
  std::vector<std::string> names;
  for (const CLI::App* s : app.get_subcommands({})) names.push_back(s->get_name());
  if (args.empty()) return args;
  if (args.size() == 1) throw UsageError("give a command: " + join(names) + " (ordo help CMD for its flags)");
  if (args[1] == "help") {
    if (args.size() == 2) return {args[0], "--help"};
    args = {args[0], args[2], "--help"};
  }
  if (args.size() >= 2 && !args[1].empty() && args[1][0] != '-' &&
      std::find(names.begin(), names.end(), args[1]) == names.end())
    throw UsageError("unknown command '" + args[1] + "'" + did_you_mean(args[1], names) + "; commands: " + join(names) +
                     " (ordo help CMD)");
  return args;
}

}  // namespace ordo::cli
