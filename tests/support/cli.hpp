// Runs the built `ordo` binary and captures its output and exit code.
#pragma once

#include <string>

#include "support/temp_dirs.hpp"  // make_temp_dir, which most CLI tests use

namespace ordo::test {

struct CliResult {
  int exit_code = -1;
  std::string out, err;
};

// args is appended to the ordo binary path as given (shell-quoted by the caller where needed).
CliResult run_cli(const std::string& args);
// run_cli that expects exit 0 (a test failure naming args and stderr otherwise); returns stdout.
std::string run_cli_ok(const std::string& args);
std::string shell_quote(const std::string& s);

// The bundled model's greedy reference case ("once_upon": prompt ids → 48 greedy ids from Hugging
// Face) through `ordo run --ids ... -n 48 --temp 0 --print-ids -q` plus `flags`: expects exit 0
// and the reference output ids in the printed output.
void expect_greedy_reference_ids(const std::string& flags);

}  // namespace ordo::test
