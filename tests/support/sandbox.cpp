// Throwaway model copies and file-size-limited `ordo` runs (support/sandbox.hpp).
#include "support/sandbox.hpp"

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <stdexcept>

#include "support/cli.hpp"
#include "support/golden.hpp"

namespace fs = std::filesystem;

namespace ordo::test {

ShellRun run_ordo_sh(const std::string& args, long long fsize_limit, const std::string& cwd, bool ignore_sigxfsz) {
  const std::string cmd =
      (cwd.empty() ? std::string() : "cd " + shell_quote(cwd) + " && ") + "exec " + shell_quote(ORDO_CLI) + " " + args;
  int fds[2];
  if (::pipe(fds) != 0) throw std::runtime_error("pipe failed");
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    ::dup2(fds[1], 1);
    ::dup2(fds[1], 2);
    ::close(fds[0]);
    ::close(fds[1]);
    ::signal(SIGPIPE, SIG_DFL);
    if (fsize_limit >= 0) {
      ::signal(SIGXFSZ, ignore_sigxfsz ? SIG_IGN : SIG_DFL);  // an ignored signal stays so across exec
      const rlimit rl{static_cast<rlim_t>(fsize_limit), static_cast<rlim_t>(fsize_limit)};
      ::setrlimit(RLIMIT_FSIZE, &rl);
    }
    ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(fds[1]);
  ShellRun r;
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) != 0;) {
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    r.output.append(buf, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal_number = WTERMSIG(status);
  return r;
}

void copy_bundled_model(const std::string& dir) {
  fs::create_directories(dir);
  fs::copy(model_dir("stories260K"), dir, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
}

std::map<std::string, std::string> snapshot(const std::string& dir) {
  std::map<std::string, std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (fs::is_regular_file(e.path())) files[e.path().lexically_relative(dir).string()] = read_file(e.path().string());
  return files;
}

std::string leftover_temporaries(const std::string& dir) {
  std::string names;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string n = e.path().filename().string();
    if (n.size() > 1 && n[0] == '.' && n.find(".ordo-") != std::string::npos) names += n + " ";
  }
  return names;
}

}  // namespace ordo::test
