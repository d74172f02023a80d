// Throwaway copies of the bundled model and `ordo` runs under a file-size limit, for output tests.
#pragma once

#include <map>
#include <string>

namespace ordo::test {

struct ShellRun {
  int exit_code = -1;  // -1: killed by a signal (signal_number says which)
  int signal_number = 0;
  std::string output;  // stdout and stderr together, unless `args` redirects stdout
};

// `sh -c "cd <cwd> && exec ORDO_CLI <args>"` (args as shell text: redirections and pipes work),
// with RLIMIT_FSIZE = fsize_limit bytes when >= 0 and SIGXFSZ ignored (unless !ignore_sigxfsz),
// so a write past the limit fails with EFBIG as on a full disk instead of killing the process.
ShellRun run_ordo_sh(const std::string& args, long long fsize_limit = -1, const std::string& cwd = "",
                     bool ignore_sigxfsz = true);

// A copy of models/stories260K at `dir` (created).
void copy_bundled_model(const std::string& dir);
// Every regular file under `dir` (links followed) by relative path → its bytes.
std::map<std::string, std::string> snapshot(const std::string& dir);
// Names in `dir` that look like an unfinished ordo temporary (".<name>.ordo-XXXXXX").
std::string leftover_temporaries(const std::string& dir);

}  // namespace ordo::test
