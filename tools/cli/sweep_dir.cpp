// A sweep directory: manifest, cell results with checksums, cell states (sweep_dir.hpp).
#include "sweep_dir.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common.hpp"
#include "ordo/output_file.hpp"
#include "sweep_temp.hpp"

namespace fs = std::filesystem;

namespace ordo::cli::sweep {

using json = nlohmann::json;

uint64_t fnv1a64(const std::string& bytes) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::string hex64(uint64_t v) {
  char buf[20];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

namespace {

std::string manifest_path(const std::string& dir) { return (fs::path(dir) / "manifest.jsonl").string(); }

std::string manifest_text(const Manifest& m) {
  std::string s =
      json{{"ordo_sweep", 1}, {"command", m.command}, {"args", m.args}, {"cwd", m.cwd}, {"cells", m.cells.size()}}
          .dump() +
      "\n";
  for (size_t i = 0; i < m.cells.size(); ++i) {
    json c = m.cells[i];
    c["cell"] = i;
    s += c.dump() + "\n";
  }
  return s;
}

bool read_all(const std::string& path, std::string& out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  std::ostringstream ss;
  ss << f.rdbuf();
  out = ss.str();
  return true;
}

}  // namespace

void write_manifest(Manifest& m, bool replace) {
  m.dir = fs::absolute(m.dir).lexically_normal().string();
  std::error_code ec;
  fs::create_directories(fs::path(m.dir) / "cells", ec);
  if (ec) throw Error("sweep plan: cannot create " + m.dir + "/cells: " + ec.message());
  fs::create_directories(fs::path(m.dir) / "logs", ec);
  const std::string text = manifest_text(m);
  std::string old;
  if (read_all(manifest_path(m.dir), old) && old != text && !replace)
    throw Error("sweep plan: " + manifest_path(m.dir) +
                " already plans another sweep; give a new DIR, or --replace to discard its results");
  if (old != text) {
    for (const auto& e : fs::directory_iterator(fs::path(m.dir) / "cells")) fs::remove(e.path(), ec);
    write_file_atomic(manifest_path(m.dir), text);
  }
  m.plan = fnv1a64(text);
}

Manifest read_manifest(const std::string& dir) {
  Manifest m;
  m.dir = fs::absolute(dir).lexically_normal().string();
  const std::string path = manifest_path(m.dir);
  if (!fs::is_directory(m.dir)) throw Error("sweep: " + dir + " is not a directory (make one with ordo sweep plan)");
  std::string text;
  if (!read_all(path, text)) throw Error("sweep: " + path + " cannot be read (make it with ordo sweep plan)");
  m.plan = fnv1a64(text);
  std::istringstream in(text);
  std::string line;
  size_t n = 0, count = 0, next_unit = 0;
  while (std::getline(in, line)) {
    ++n;
    const std::string where = path + " line " + std::to_string(n);
    json j = json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) throw Error("sweep: " + where + " is not a JSON object");
    try {
      if (n == 1) {
        if (j.value("ordo_sweep", 0) != 1) throw Error("no \"ordo_sweep\": 1 header");
        m.command = j.at("command").get<std::string>();
        m.args = j.at("args").get<std::vector<std::string>>();
        m.cwd = j.at("cwd").get<std::string>();
        count = j.at("cells").get<size_t>();
      } else {
        if (j.at("cell").get<size_t>() != m.cells.size()) throw Error("cell " + j.at("cell").dump() + " out of order");
        // What run and merge read of a cell, checked here so a hand-edited line is a named error.
        const json& units = j.at("units");
        if (!units.is_array() || units.empty()) throw Error("\"units\" must be a non-empty array");
        if (j.at("first").get<size_t>() != next_unit)
          throw Error("\"first\" is " + j.at("first").dump() + ", the cells before it end at unit " +
                      std::to_string(next_unit));
        if (j.contains("label") && !j.at("label").is_string()) throw Error("\"label\" must be a string");
        next_unit += units.size();
        m.cells.push_back(j);
      }
    } catch (const json::exception& e) {
      throw Error("sweep: " + where + ": " + e.what());
    } catch (const Error& e) {
      throw Error("sweep: " + where + ": " + e.what());
    }
  }
  if (n == 0) throw Error("sweep: " + path + " is empty");
  if (m.cells.size() != count)
    throw Error("sweep: " + path + " lists " + std::to_string(m.cells.size()) + " cells, its header says " +
                std::to_string(count));
  return m;
}

size_t cell_index(const Manifest& m, long long index) {
  if (index < 0 || static_cast<size_t>(index) >= m.cells.size())
    throw Error("--cell " + std::to_string(index) + ": " + m.dir + " has cells 0 to " +
                std::to_string(static_cast<long long>(m.cells.size()) - 1));
  return static_cast<size_t>(index);
}

std::string result_path(const Manifest& m, size_t cell) {
  return (fs::path(m.dir) / "cells" / (std::to_string(cell) + ".result")).string();
}
std::string failed_path(const Manifest& m, size_t cell) {
  return (fs::path(m.dir) / "cells" / (std::to_string(cell) + ".failed")).string();
}
std::string log_path(const Manifest& m, size_t cell) {
  return (fs::path(m.dir) / "logs" / (std::to_string(cell) + ".log")).string();
}

void write_result(const Manifest& m, size_t cell, const std::vector<json>& numbers) {
  const std::string body = json(numbers).dump() + "\n";
  const std::string head = "ordo-sweep-cell 1 cell=" + std::to_string(cell) + " plan=" + hex64(m.plan) +
                           " bytes=" + std::to_string(body.size()) + " fnv1a64=" + hex64(fnv1a64(body)) + "\n";
  write_cell_file(result_path(m, cell), head + body);  // temporary file, fsync, rename
  std::error_code ec;
  fs::remove(failed_path(m, cell), ec);
}

void write_failure(const Manifest& m, size_t cell, const std::string& message) {
  write_cell_file(failed_path(m, cell), message + "\n");
}

CellState cell_state(const Manifest& m, size_t cell, std::string* why, json* numbers) {
  std::string text;
  if (!read_all(result_path(m, cell), text))
    return fs::exists(failed_path(m, cell)) ? CellState::Failed : CellState::Missing;
  const size_t nl = text.find('\n');
  const std::string head = text.substr(0, nl), body = nl == std::string::npos ? "" : text.substr(nl + 1);
  const std::string want_prefix = "ordo-sweep-cell 1 cell=" + std::to_string(cell) + " plan=" + hex64(m.plan) + " ";
  const std::string tail = " fnv1a64=" + hex64(fnv1a64(body));
  std::string problem;
  if (head.compare(0, want_prefix.size(), want_prefix) != 0)
    problem = "its header is not this cell's of this plan";
  else if (head != want_prefix + "bytes=" + std::to_string(body.size()) + tail)
    problem = "its size or checksum does not match (truncated or corrupt)";
  json j;
  if (problem.empty()) {
    j = json::parse(body, nullptr, false);
    if (j.is_discarded() || !j.is_array()) problem = "its JSON is not an array of numbers";
  }
  if (!problem.empty()) {
    if (why) *why = result_path(m, cell) + ": " + problem;
    return CellState::Corrupt;
  }
  if (numbers) *numbers = std::move(j);
  return CellState::Done;
}

const char* state_name(CellState s) {
  switch (s) {
    case CellState::Done: return "done";
    case CellState::Failed: return "failed";
    case CellState::Corrupt: return "corrupt";
    case CellState::Missing: return "missing";
  }
  return "?";
}

std::string id_ranges(const std::vector<size_t>& ids) {
  std::string s;
  for (size_t i = 0; i < ids.size();) {
    size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
    s += (s.empty() ? "" : ",") + std::to_string(ids[i]) + (j > i ? "-" + std::to_string(ids[j]) : "");
    i = j + 1;
  }
  return s;
}

}  // namespace ordo::cli::sweep
