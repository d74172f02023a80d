// Runs the built `ordo` binary and captures its output and exit code.
#include "support/cli.hpp"

#include "support/golden.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

namespace ordo::test {

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string run_cli_ok(const std::string& args) {
  const CliResult r = run_cli(args);
  EXPECT_EQ(r.exit_code, 0) << args << "\n" << r.err;
  return r.out;
}

void expect_greedy_reference_ids(const std::string& flags) {
  const Golden g = Golden::load("stories260K");
  const nlohmann::json& greedy = g.case_json("once_upon").at("greedy");
  std::string ids, expected;
  for (int id : greedy.at("input_ids")) ids += (ids.empty() ? "" : ",") + std::to_string(id);
  for (int id : greedy.at("output_ids")) expected += (expected.empty() ? "" : ",") + std::to_string(id);
  const CliResult r = run_cli("run --ids " + ids + " -n 48 --temp 0 --print-ids -q " + flags);
  ASSERT_EQ(r.exit_code, 0) << flags << ": " << r.err;
  EXPECT_NE(r.out.find(expected + "\n"), std::string::npos) << flags << ": " << r.out;
}

CliResult run_cli(const std::string& args) {
  const std::string dir = make_temp_dir("cli");
  const std::string out = dir + "/out", err = dir + "/err";
  const std::string cmd = shell_quote(ORDO_CLI) + " " + args + " >" + out + " 2>" + err + " </dev/null";
  const int status = std::system(cmd.c_str());
  CliResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = read_file(out);
  r.err = read_file(err);
  std::filesystem::remove_all(dir);
  return r;
}

}  // namespace ordo::test
