// ordo: run transformer models with pluggable position schemes.
// Exit codes: 0 ok, 2 usage error, 1 runtime error.
#include <unistd.h>

#include <cstdlib>
#include <iostream>

#include "common.hpp"
#include "ordo/version.hpp"

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
  CLI::App app{"ordo: a small transformer inference engine with pluggable position schemes"};
  app.set_version_flag("--version", ordo::version());
  app.require_subcommand(1);
  std::vector<std::unique_ptr<ordo::cli::Command>> commands;
  commands.push_back(ordo::cli::make_run());
  commands.push_back(ordo::cli::make_tokenize());
  commands.push_back(ordo::cli::make_inspect());
  commands.push_back(ordo::cli::make_forward());
  commands.push_back(ordo::cli::make_ppl());
  commands.push_back(ordo::cli::make_embed());
  commands.push_back(ordo::cli::make_compare());
  commands.push_back(ordo::cli::make_bench());
  commands.push_back(ordo::cli::make_quantize());
  std::vector<CLI::App*> subs;
  for (auto& c : commands) subs.push_back(c->add(app));
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;
  }
  try {
    for (size_t i = 0; i < commands.size(); ++i)
      if (subs[i]->parsed()) return commands[i]->run();
  } catch (const std::exception& e) {
    std::cout.flush();
    std::cerr << "ordo: error: " << e.what() << "\n";
    return 1;
  }
  return 2;
}
