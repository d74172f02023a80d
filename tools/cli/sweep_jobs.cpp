// Processes for `ordo sweep` (sweep_jobs.hpp): fork/exec children, N at a time, and sbatch.
#include "sweep_jobs.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <map>

#include "common.hpp"

extern char** environ;

namespace ordo::cli::sweep {

std::string self_exe() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) throw Error("sweep: cannot find this program's path (/proc/self/exe)");
  return std::string(buf, static_cast<size_t>(n));
}

namespace {

// Starts argv with stdout and stderr on fd `out`; the child's pid.
pid_t spawn(const std::vector<std::string>& argv, int out, bool search) {
  std::vector<char*> a;
  for (const std::string& s : argv) a.push_back(const_cast<char*>(s.c_str()));
  a.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out, STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&fa, out, STDERR_FILENO);
  posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  pid_t pid = -1;
  const int rc = search ? posix_spawnp(&pid, a[0], &fa, nullptr, a.data(), environ)
                        : posix_spawn(&pid, a[0], &fa, nullptr, a.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) throw Error("sweep: cannot start " + argv[0] + ": " + std::strerror(rc));
  return pid;
}

std::string how_it_ended(int status) {
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
  return "exit " + std::to_string(WEXITSTATUS(status));
}

}  // namespace

std::vector<size_t> run_cells(const Manifest& m, const std::vector<size_t>& cells, int jobs, bool force) {
  const std::string exe = self_exe();
  std::map<pid_t, size_t> running;
  std::vector<size_t> failed;
  size_t next = 0, finished = 0;
  // A cell that cannot start (its log unwritable, no process left) stops new starts, but the cells
  // already running are waited for before the error is thrown: none outlives this call.
  std::string start_error;
  while ((next < cells.size() && start_error.empty()) || !running.empty()) {
    while (next < cells.size() && start_error.empty() && static_cast<int>(running.size()) < jobs) {
      const size_t c = cells[next++];
      const std::string log = log_path(m, c);
      const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (fd < 0) {
        start_error = "sweep run: cannot write " + log + ": " + std::strerror(errno);
        break;
      }
      try {
        std::vector<std::string> argv = {exe, "sweep", "run", m.dir, "--cell", std::to_string(c)};
        if (force) argv.push_back("--force");
        running[spawn(argv, fd, false)] = c;
      } catch (const std::exception& e) {
        start_error = e.what();
      }
      ::close(fd);
    }
    if (running.empty()) break;
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      throw Error(std::string("sweep run: waitpid: ") + std::strerror(errno));
    }
    auto it = running.find(pid);
    if (it == running.end()) continue;
    const size_t c = it->second;
    running.erase(it);
    ++finished;
    const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    std::cerr << "ordo sweep: " << finished << " of " << cells.size() << ": cell " << c << " ("
              << m.cells[c].value("label", "") << ") "
              << (ok ? "done" : how_it_ended(status) + ", see " + log_path(m, c)) << "\n";
    if (!ok) failed.push_back(c);
  }
  if (!start_error.empty()) throw Error(start_error);
  return failed;
}

int run_capture(const std::vector<std::string>& argv, std::string& output) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) throw Error(std::string("sweep: pipe: ") + std::strerror(errno));
  pid_t pid = -1;
  try {
    pid = spawn(argv, p[1], true);
  } catch (const Error&) {
    ::close(p[0]);
    ::close(p[1]);
    output = argv[0] + ": not found";
    return 127;
  }
  ::close(p[1]);
  char buf[4096];
  for (ssize_t n; (n = ::read(p[0], buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    output.append(buf, static_cast<size_t>(n));
  }
  ::close(p[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace ordo::cli::sweep
