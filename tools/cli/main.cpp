// ordo: run transformer models with pluggable position schemes.
// Exit codes: 0 ok, 2 usage error, 1 runtime error.
#include <csignal>
#include <cstdio>
#include <iostream>
#include <new>

#include "common.hpp"
#include "usage.hpp"

// The CLI's entry point, in the module libordo_cli.so: the `ordo` executable is a launcher
// (tools/launcher/launcher.c) that sets the libraries' environment and loads this module, so that
// a process under a small `ulimit -v` starts and says it ran out of memory loading the libraries.
extern "C" int ordo_main(int argc, char** argv) {
  // Past a file-size limit (ulimit -f) a write fails with EFBIG and is reported naming the file,
  // and the temporary file is removed, instead of SIGXFSZ killing the process mid-write.
  std::signal(SIGXFSZ, SIG_IGN);
  ordo::cli::keep_stdout_errors();
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
