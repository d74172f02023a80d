// StepTimes recording: the per-thread recording scope and adding a finished step to it.
#include "ordo/step_times.hpp"

#include "step_timer.hpp"

namespace ordo {

namespace detail {

thread_local StepTimes* t_recording = nullptr;
thread_local StepTimes* t_step_times = nullptr;

void StepTimer::finish() {
  StepTimes* r = into_;
  if (!r) return;
  r->total += seconds_since(t0_);
  r->linears += parts_.linears;
  r->attention += parts_.attention;
  r->rope_and_cache += parts_.rope_and_cache;
  r->lm_head += parts_.lm_head;
  ++r->steps;
}

}  // namespace detail

StepTimes::Recording::Recording(StepTimes& into) : previous_(detail::t_recording) { detail::t_recording = &into; }
StepTimes::Recording::~Recording() { detail::t_recording = previous_; }

}  // namespace ordo
