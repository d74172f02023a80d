// Where decoder steps' wall time goes: the parts a step is timed in, and the recording scope.
#pragma once

#include <cstdint>

namespace ordo {

// Where decoder steps' wall time goes (Transformer::decode and decode_batch): seconds, summed over
// the steps a thread runs while a StepTimes::Recording on that thread is alive. Each part is timed
// on the thread that leads the step (the caller), so it includes waiting for the step's other
// threads to finish it. Recording reads the clock about a hundred times a step; with no recording
// alive the parts are not timed. A StepTimes is written by one thread: give each thread its own.
struct StepTimes {
  int64_t steps = 0;
  double total = 0;
  double linears = 0;         // the layers' weight multiplications: q, k, v, out and the FFN
  double attention = 0;       // scores, softmax and the weighted sum of values over the caches
  double rope_and_cache = 0;  // rotating queries and keys, writing keys and values to the caches
  double lm_head = 0;         // the logits
  // Embedding, norms, residuals, activations and the step's bookkeeping.
  double other() const { return total - linears - attention - rope_and_cache - lm_head; }

  // While alive, the steps the constructing thread runs add to `into`. Recordings nest: the
  // innermost one receives the steps, and the outer one again once it is destroyed.
  class Recording {
   public:
    explicit Recording(StepTimes& into);
    ~Recording();
    Recording(const Recording&) = delete;
    Recording& operator=(const Recording&) = delete;

   private:
    StepTimes* previous_;
  };
};

}  // namespace ordo
