// ordo: run transformer models with pluggable position schemes.
// Exit codes: 0 ok, 2 usage error, 1 runtime error.
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <new>

#include "common.hpp"
#include "usage.hpp"

namespace {

// Settings the libraries read once, when they are loaded. Unless the user set them, the CLI
// re-executes itself with them in its environment, from .preinit_array: that runs before any
// shared library's initialiser (so OpenBLAS has started nothing yet) and before the C++ runtime
// is set up (so it uses C calls only). setenv there would not last: libc's own initialiser
// resets the environment to the one the process was given.
// - libgomp's default wait policy spins idle threads for a long time at every barrier. On a
//   machine whose cores are busy with other work that turns each parallel region into a
//   scheduler-quantum stall (decode ran ~3x slower under load; docs/performance.md): the CLI runs
//   with OMP_WAIT_POLICY=PASSIVE unless the user chose a policy (OMP_WAIT_POLICY or
//   GOMP_SPINCOUNT set: e.g. OMP_WAIT_POLICY=active on a dedicated machine).
// - OpenBLAS starts a pool of worker threads at load, each taking a 128 MiB buffer; ordo never
//   uses them (it runs OpenBLAS single-threaded inside its own threads, threads.cpp), and under
//   `ulimit -v` a worker retries a failed buffer allocation forever (the process never exits) or
//   failing to start one, OpenBLAS ends the process. OPENBLAS_NUM_THREADS=1 starts no workers.
bool has_variable(char** envp, const char* name) {
  const size_t n = std::strlen(name);
  for (char** e = envp; *e; ++e)
    if (std::strncmp(*e, name, n) == 0 && (*e)[n] == '=') return true;
  return false;
}

void set_library_environment(int, char** argv, char** envp) {
  if (!envp || !argv) return;
  const bool wait = !has_variable(envp, "OMP_WAIT_POLICY") && !has_variable(envp, "GOMP_SPINCOUNT");
  const bool blas = !has_variable(envp, "OPENBLAS_NUM_THREADS");
  if (!wait && !blas) return;
  size_t n = 0;
  while (envp[n]) ++n;
  auto env = static_cast<char**>(std::malloc((n + 3) * sizeof(char*)));
  if (!env) return;
  std::memcpy(env, envp, n * sizeof(char*));
  static char wait_policy[] = "OMP_WAIT_POLICY=PASSIVE", blas_threads[] = "OPENBLAS_NUM_THREADS=1";
  if (wait) env[n++] = wait_policy;
  if (blas) env[n++] = blas_threads;
  env[n] = nullptr;
  execve("/proc/self/exe", argv, env);
  std::free(env);  // exec failed: run on with the libraries' defaults
}

__attribute__((section(".preinit_array"), used)) void (*const preinit_library_environment)(int, char**, char**) =
    &set_library_environment;

}  // namespace

int main(int argc, char** argv) {
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
  } catch (const std::bad_alloc&) {
    // An allocation ordo does not check itself (a container's growth): say what ran out.
    std::cout.flush();
    const auto subs = cli.app.get_subcommands();
    std::cerr << "ordo: error: out of memory in `ordo" << (subs.empty() ? "" : " " + subs.front()->get_name())
              << "` (ulimit -v?)\n";
    return 1;
  } catch (const std::exception& e) {
    std::cout.flush();
    std::cerr << "ordo: error: " << e.what() << "\n";
    return 1;
  }
}
