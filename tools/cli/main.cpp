// ordo: run transformer models with pluggable position schemes.
// Exit codes: 0 ok, 2 usage error, 1 runtime error.
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "common.hpp"
#include "usage.hpp"

namespace {

// libgomp's default wait policy spins idle threads for a long time at every barrier. On a machine
// whose cores are busy with other work that turns each parallel region into a scheduler-quantum
// stall (decode ran ~3x slower under load; docs/performance.md). libgomp reads the policy once,
// when it is loaded, so the CLI re-executes
// itself with OMP_WAIT_POLICY=PASSIVE unless the user chose a policy (OMP_WAIT_POLICY or
// GOMP_SPINCOUNT set: e.g. OMP_WAIT_POLICY=active on a dedicated machine).
void ensure_passive_wait_policy(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") || std::getenv("GOMP_SPINCOUNT")) return;
  if (setenv("OMP_WAIT_POLICY", "PASSIVE", 1) != 0) return;
  execv("/proc/self/exe", argv);
  // exec failed: run on with libgomp's default policy (already initialised in this process).
}

}  // namespace

int main(int argc, char** argv) {
  ensure_passive_wait_policy(argv);
  // Past a file-size limit (ulimit -f) a write fails with EFBIG and is reported naming the file,
  // and the temporary file is removed, instead of SIGXFSZ killing the process mid-write.
  std::signal(SIGXFSZ, SIG_IGN);
  ordo::cli::CliApp cli;
  ordo::cli::Command* command = nullptr;
  // Usage errors (the command line itself) exit 2, runtime errors 1, for every subcommand.
  const auto usage = [](const std::string& message) {
    std::cout.flush();
    std::cerr << "ordo: error: " << message << "\n";
    return 2;
  };
  try {
    command = cli.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return cli.app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return cli.app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return cli.app.exit(e);
  } catch (const CLI::ParseError& e) {
    return usage(ordo::cli::usage_message(cli.app, e));
  } catch (const std::exception& e) {
    return usage(e.what());
  }
  if (!command) return 2;
  try {
    command->validate();  // flags only: anything wrong here is a usage error
  } catch (const std::exception& e) {
    return usage(e.what());
  }
  try {
    const int rc = command->run();
    // Output nobody could read is not success: a full disk or closed stdout fails the command
    // (a closed pipe still ends it by SIGPIPE, silently, as `| head` expects).
    ordo::cli::check_stdout();
    return rc;
  } catch (const CLI::ParseError& e) {
    return usage(ordo::cli::usage_message(cli.app, e));
  } catch (const ordo::cli::UsageError& e) {
    return usage(e.what());
  } catch (const std::exception& e) {
    std::cout.flush();
    std::cerr << "ordo: error: " << e.what() << "\n";
    return 1;
  }
}
