// `ordo sweep slurm` (sweep_slurm.hpp): job array scripts, one task per cell, and sbatch.
#include "sweep_slurm.hpp"

#include <filesystem>
#include <iostream>
#include <map>

#include "common.hpp"
#include "ordo/output_file.hpp"
#include "sweep_jobs.hpp"

namespace fs = std::filesystem;

namespace ordo::cli::sweep {

namespace {

std::string sh_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// An #SBATCH argument as sbatch's script parser reads it: in double quotes, '"' and '\\' escaped by a
// backslash (unquoted, a space ends the argument and a '#' starts a comment).
std::string sbatch_quote(const std::string& s) {
  std::string q = "\"";
  for (char c : s) q += c == '"' || c == '\\' ? std::string("\\") + c : std::string(1, c);
  return q + "\"";
}

// One array: task T runs cell OFFSET + T. Array indices stay below MaxArraySize.
std::string array_script(const Manifest& m, const std::string& exe, size_t offset, const std::string& spec) {
  std::string s = "#!/bin/bash\n";
  s += "# ordo sweep: cells " + std::to_string(offset) + "+SLURM_ARRAY_TASK_ID of " + m.dir + " (" + m.command +
       "), one per array task\n";
  s += "#SBATCH --job-name=ordo-sweep\n";
  s += "#SBATCH --array=" + spec + "\n";
  s += "#SBATCH --output=" + sbatch_quote((fs::path(m.dir) / "logs" / "slurm-%A_%a.out").string()) + "\n";
  s += "set -eu\n";
  s += "exec " + sh_quote(exe) + " sweep run " + sh_quote(m.dir) + " --cell $((" + std::to_string(offset) +
       " + SLURM_ARRAY_TASK_ID))\n";
  return s;
}

}  // namespace

size_t submit_arrays(const Manifest& m, const SlurmOptions& o) {
  if (o.max_parallel < 0) throw Error("--max-parallel must be >= 0, got " + std::to_string(o.max_parallel));
  if (o.max_array_size < 1) throw Error("--max-array-size must be >= 1, got " + std::to_string(o.max_array_size));
  // Blocks of max_array_size ids: block B holds cells B*M .. B*M+M-1 as array indices 0 .. M-1.
  std::map<size_t, std::vector<size_t>> blocks;
  const size_t M = static_cast<size_t>(o.max_array_size);
  for (size_t c = 0; c < m.cells.size(); ++c)
    if (cell_state(m, c) != CellState::Done) blocks[c / M].push_back(c % M);
  if (blocks.empty()) {
    std::cout << "every cell of " << m.dir << " is done: nothing to submit\n";
    return 0;
  }
  const std::string exe = self_exe();
  std::error_code ec;
  fs::create_directories(fs::path(m.dir) / "slurm", ec);
  for (const auto& [block, ids] : blocks) {
    std::string spec = id_ranges(ids);
    if (o.max_parallel > 0) spec += "%" + std::to_string(o.max_parallel);
    const std::string path = (fs::path(m.dir) / "slurm" / ("array-" + std::to_string(block) + ".sbatch")).string();
    write_file_atomic(path, array_script(m, exe, block * M, spec));
    fs::permissions(path, fs::perms::owner_exec | fs::perms::group_exec, fs::perm_options::add, ec);
    std::vector<std::string> argv = {"sbatch", "--parsable"};
    argv.insert(argv.end(), o.sbatch_args.begin(), o.sbatch_args.end());
    argv.push_back(path);
    std::string cmd;
    for (const std::string& a : argv) cmd += (cmd.empty() ? "" : " ") + sh_quote(a);
    if (!o.submit) {
      std::cout << "wrote " << path << " (" << ids.size() << " tasks, --array=" << spec << "); submit with: " << cmd
                << "\n";
      continue;
    }
    std::string out;
    const int rc = run_capture(argv, out);
    while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
    if (rc != 0) throw Error("sweep slurm: " + cmd + " failed (exit " + std::to_string(rc) + "): " + out);
    std::cout << "submitted job " << out << ": " << ids.size() << " tasks, --array=" << spec << " (" << path << ")\n";
  }
  return blocks.size();
}

}  // namespace ordo::cli::sweep
