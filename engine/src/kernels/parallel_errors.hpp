// Private: carrying an exception out of an OpenMP parallel region, where one thrown would end the process.
#pragma once

#include <exception>
#include <mutex>

namespace ordo::detail {

// Runs each piece of a region's work through run(): the first exception is kept (later pieces
// still run, they cannot be cancelled) and rethrow(), called after the region, throws it. An out
// of memory inside a kernel's loop then reaches the caller as the error it is.
class ParallelErrors {
 public:
  template <class F>
  void run(F&& f) noexcept {
    try {
      f();
    } catch (...) {
      keep_current();
    }
  }
  // For a catch (...) block of the caller's own: keeps the exception being handled.
  void keep_current() noexcept {
    std::lock_guard<std::mutex> lock(mu_);
    if (!first_) first_ = std::current_exception();
  }
  void rethrow() const {
    if (first_) std::rethrow_exception(first_);
  }

 private:
  std::mutex mu_;
  std::exception_ptr first_;
};

}  // namespace ordo::detail
