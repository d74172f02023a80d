// A batched forward's rows through the linear layers, as its plan says (one-token rows, prompts).
#include "batch.hpp"

#include "kernels/gemm_backend.hpp"
#include "step_timer.hpp"

namespace ordo::detail {

void project(Backend be, const Batch& b, const float* x, int64_t K, std::initializer_list<LinearTarget> targets) {
  const PartTimer timer(&StepTimes::linears);
  constexpr size_t kMax = 4;
  if (targets.size() > kMax) throw Error("project: at most 4 weights per group");
  LinearTarget at[kMax];
  // The targets with their outputs moved to row r0.
  auto rows_from = [&](int64_t r0) {
    size_t i = 0;
    for (const LinearTarget& t : targets) at[i++] = LinearTarget{t.w, t.y + r0 * t.w->out_features()};
    return at;
  };
  if (b.single_rows > 0) linear_targets(be, x, b.single_rows, K, rows_from(0), targets.size());
  if (b.single_rows == b.rows) return;
  if (!b.prompts_alone) {
    linear_targets(be, x + b.single_rows * K, b.rows - b.single_rows, K, rows_from(b.single_rows), targets.size());
    return;
  }
  for (const Segment& s : b.segs)
    if (s.row0 >= b.single_rows) linear_targets(be, x + s.row0 * K, s.T, K, rows_from(s.row0), targets.size());
}

}  // namespace ordo::detail
