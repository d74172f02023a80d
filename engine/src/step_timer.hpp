// Timing a decoder step's parts into the StepTimes being recorded on this thread.
#pragma once

#include <chrono>

#include "ordo/step_times.hpp"

namespace ordo::detail {

// The recording (StepTimes::Recording) alive on this thread, and the step it is timing now: parts
// are timed only inside a step, so an encoder forward under a recording adds nothing.
extern thread_local StepTimes* t_recording;
extern thread_local StepTimes* t_step_times;

using StepClock = std::chrono::steady_clock;
inline double seconds_since(StepClock::time_point t0) {
  return std::chrono::duration<double>(StepClock::now() - t0).count();
}

// Adds the wall time of its scope to one part of the step being recorded, if any.
class PartTimer {
 public:
  explicit PartTimer(double StepTimes::*part) : into_(t_step_times), part_(part) {
    if (into_) t0_ = StepClock::now();
  }
  ~PartTimer() {
    if (into_) into_->*part_ += seconds_since(t0_);
  }
  PartTimer(const PartTimer&) = delete;
  PartTimer& operator=(const PartTimer&) = delete;

 private:
  StepTimes* into_;
  double StepTimes::*part_;
  StepClock::time_point t0_;
};

// A step's timing: while alive (the step runs) its parts go to `parts`; finish() adds them and the
// step's total to the recording. A step that throws adds nothing.
class StepTimer {
 public:
  StepTimer() : into_(t_recording), outer_(t_step_times) {
    if (into_) t0_ = StepClock::now();
    t_step_times = into_ ? &parts_ : nullptr;
  }
  ~StepTimer() { t_step_times = outer_; }
  StepTimer(const StepTimer&) = delete;
  StepTimer& operator=(const StepTimer&) = delete;
  void finish();

 private:
  StepTimes* into_;
  StepTimes* outer_;
  StepTimes parts_;
  StepClock::time_point t0_{};
};

}  // namespace ordo::detail
