// A sweep directory: the manifest (the command, its arguments, one line per cell) and the cells'
// results, each written atomically with a checksum and verified before it counts as done.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace ordo::cli::sweep {

// DIR/manifest.jsonl: a header line {"ordo_sweep": 1, "command", "args", "cwd", "cells": N},
// then one line per cell {"cell": I, "first": U, "units": [...], "label"}: the cell runs units U,
// U + 1, ... of the command's grid (sweep_target.hpp) in one process.
struct Manifest {
  std::string dir;  // absolute
  std::string command, cwd;
  std::vector<std::string> args;
  std::vector<nlohmann::json> cells;
  uint64_t plan = 0;  // checksum of the manifest's bytes: results of another plan do not count
};

uint64_t fnv1a64(const std::string& bytes);
std::string hex64(uint64_t v);

// Writes DIR/manifest.jsonl (DIR created; an existing sweep of other arguments is an error unless
// `replace`, so a typo cannot orphan its results).
void write_manifest(Manifest& m, bool replace);
// Error naming the file and line when DIR holds no readable manifest.
Manifest read_manifest(const std::string& dir);

// Cell index from the command line ("--cell"), checked against the manifest.
size_t cell_index(const Manifest& m, long long index);

std::string result_path(const Manifest& m, size_t cell);
std::string failed_path(const Manifest& m, size_t cell);
std::string log_path(const Manifest& m, size_t cell);

// The cell's result, atomically: "ordo-sweep-cell 1 cell=I plan=HEX bytes=N fnv1a64=HEX\n" then
// the JSON array of its units' numbers. Removes an earlier failure note.
void write_result(const Manifest& m, size_t cell, const std::vector<nlohmann::json>& numbers);
void write_failure(const Manifest& m, size_t cell, const std::string& message);

enum class CellState { Done, Failed, Corrupt, Missing };
// The state of a cell; a result that does not verify is Corrupt and `why` says how.
CellState cell_state(const Manifest& m, size_t cell, std::string* why = nullptr, nlohmann::json* numbers = nullptr);
const char* state_name(CellState s);

// "0-3,7,9-10": ids as Slurm array ranges.
std::string id_ranges(const std::vector<size_t>& ids);

}  // namespace ordo::cli::sweep
