// Progress of a long command on stderr (progress.hpp).
#include "progress.hpp"

#include <cmath>
#include <cstdio>

namespace ordo::cli {

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const long s = std::lround(seconds);
  char buf[32];
  if (s < 60)
    std::snprintf(buf, sizeof buf, "%ld s", s);
  else if (s < 3600)
    std::snprintf(buf, sizeof buf, "%ld:%02ld", s / 60, s % 60);
  else
    std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
  return buf;
}

std::string progress_line(const std::string& task, size_t k, size_t total, const std::string& unit, double elapsed) {
  std::ostringstream os;
  os << task << ": " << k << " of " << total;
  if (!unit.empty()) os << " " << unit;
  os << " (elapsed " << format_duration(elapsed);
  if (k > 1 && total >= k) os << ", ETA " << format_duration(elapsed / double(k - 1) * double(total - k + 1));
  os << ")";
  return os.str();
}

Progress::Progress(std::string task, size_t total, std::ostream& err, bool tty)
    : task_(std::move(task)), total_(total), err_(err), tty_(tty) {}

double Progress::elapsed() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void Progress::step(size_t k, const std::string& unit) {
  line_ = progress_line(task_, k, total_, unit, elapsed());
  if (tty_)
    draw("");
  else
    err_ << line_ << "\n" << std::flush;
}

void Progress::draw(const std::string& detail) const {
  std::string s = line_;
  if (!detail.empty()) s += s.empty() ? detail : " · " + detail;
  err_ << "\r\033[K" << s << std::flush;
}

void Progress::note(const std::string& message) const {
  if (!tty_) {
    err_ << message << "\n" << std::flush;
    return;
  }
  err_ << "\r\033[K" << message << "\n";
  draw("");
}

void Progress::clear() const {
  if (tty_) err_ << "\r\033[K" << std::flush;
}

void Progress::finish() const {
  if (total_ == 0) return;
  clear();
  err_ << task_ << ": " << total_ << " of " << total_ << " done in " << format_duration(elapsed()) << "\n"
       << std::flush;
}

}  // namespace ordo::cli
