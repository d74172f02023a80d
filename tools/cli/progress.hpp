// Progress of a long command on stderr: `k of N` and an ETA, one line rewritten in place on a
// terminal, a plain line per unit elsewhere (so logs show it); never anything on stdout.
#pragma once

#include <unistd.h>

#include <chrono>
#include <iostream>
#include <sstream>
#include <string>

namespace ordo::cli {

// "1:05" / "12 s" / "1:02:03": how long, for a person.
std::string format_duration(double seconds);

// The line for unit k of total (1-based) that is starting now, `elapsed` seconds after the first
// began: "TASK: k of N UNIT (elapsed 12 s, ETA 40 s)"; the ETA is the mean of the finished units
// times the units left, so the first unit has none.
std::string progress_line(const std::string& task, size_t k, size_t total, const std::string& unit, double elapsed);

class Progress {
 public:
  // total 0: no units (only detail()/clear(), for in-place status inside a unit on a terminal).
  explicit Progress(std::string task = "", size_t total = 0, std::ostream& err = std::cerr,
                    bool tty = isatty(STDERR_FILENO) != 0);

  // Unit k (1-based) starts: on a terminal the status line is redrawn; elsewhere one line is printed.
  void step(size_t k, const std::string& unit);
  // Status inside the current unit (a window count, a pair count): a terminal only, in place.
  template <class... A>
  void show(const A&... parts) const {
    if (!tty_) return;
    std::ostringstream os;
    (os << ... << parts);
    draw(os.str());
  }
  // A message of its own line (a warning, what a unit is doing), above the status line.
  void note(const std::string& message) const;
  // The status line removed (a terminal), e.g. before an error is printed.
  void clear() const;
  // All units done: "TASK: N of N done in 1:05" on its own line.
  void finish() const;
  bool tty() const { return tty_; }

 private:
  void draw(const std::string& detail) const;
  double elapsed() const;
  std::string task_;
  size_t total_;
  std::ostream& err_;
  bool tty_;
  std::string line_;  // the current unit's status line
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

}  // namespace ordo::cli
