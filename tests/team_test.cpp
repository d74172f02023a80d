// The decode step's thread team (engine/src/kernels/team.hpp, private): every item of every loop runs
// exactly once and its writes are visible to the leader afterwards, the other thread really takes
// items (also after it fell asleep between loops), exceptions reach the caller and leave nothing
// stuck, and nested calls run inline.
#include <gtest/gtest.h>

#include <omp.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <numeric>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "../engine/src/kernels/team.hpp"  // private
#include "ordo/ops.hpp"

namespace {

using ordo::detail::parallel_items;
using ordo::detail::run_as_team;

// Two threads for the test's duration, whatever the machine has, so the team has a member to test.
class TeamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    before_ = ordo::num_threads();
    ordo::set_num_threads(2);
  }
  void TearDown() override { ordo::set_num_threads(before_); }

 private:
  int before_ = 0;
};

// Runs a loop of n items that each add (i + 1) to slot i; returns whether every slot got exactly that.
bool each_item_once(int64_t n, bool parallel) {
  std::vector<int64_t> hits(static_cast<size_t>(n), 0);
  parallel_items(n, parallel, [&](int64_t i) { hits[static_cast<size_t>(i)] += i + 1; });
  for (int64_t i = 0; i < n; ++i)
    if (hits[static_cast<size_t>(i)] != i + 1) return false;
  return true;
}

// Busy for about `us` microseconds, so the other thread has time to take items.
void busy_for(int us) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::microseconds(us);
  while (std::chrono::steady_clock::now() < end) {
  }
}

// Repeats loops of slow items until a thread other than the caller ran one (or 2 s passed).
bool other_thread_takes_items() {
  const auto self = std::this_thread::get_id();
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  std::atomic<bool> other{false};
  while (!other && std::chrono::steady_clock::now() < give_up)
    parallel_items(16, true, [&](int64_t) {
      busy_for(100);
      if (std::this_thread::get_id() != self) other = true;
    });
  return other;
}

TEST_F(TeamTest, OutsideATeamEveryItemRunsOnce) {
  for (int64_t n : {0, 1, 2, 7, 64, 1000}) {
    EXPECT_TRUE(each_item_once(n, true)) << "n=" << n;
    EXPECT_TRUE(each_item_once(n, false)) << "n=" << n;
  }
}

TEST_F(TeamTest, SerialLoopRunsInOrderOnTheCaller) {
  std::vector<int64_t> order;
  const auto self = std::this_thread::get_id();
  bool on_caller = true;
  run_as_team([&] {
    parallel_items(5, false, [&](int64_t i) {
      order.push_back(i);
      on_caller = on_caller && std::this_thread::get_id() == self;
    });
  });
  EXPECT_EQ(order, (std::vector<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_TRUE(on_caller);
}

TEST_F(TeamTest, ManyLoopsInATeamEachRunEveryItemOnce) {
  // Thousands of back-to-back loops of varying length: the leader reads each loop's results
  // right after it, so a missed, repeated or late item shows up as a wrong sum.
  bool all_once = true;
  int64_t loops = 0;
  run_as_team([&] {
    for (int64_t rep = 0; rep < 3000; ++rep, ++loops) all_once = all_once && each_item_once(1 + rep % 37, true);
  });
  EXPECT_TRUE(all_once);
  EXPECT_EQ(loops, 3000);
}

TEST_F(TeamTest, TheOtherThreadTakesItems) {
  bool other = false;
  run_as_team([&] { other = other_thread_takes_items(); });
  EXPECT_TRUE(other);
}

TEST_F(TeamTest, TheOtherThreadWakesAfterSleepingBetweenLoops) {
  bool first = false, after_sleep = false;
  run_as_team([&] {
    first = other_thread_takes_items();
    // Far longer than the spin: the other thread goes to sleep and must be woken by the next loop.
    std::this_thread::sleep_for(std::chrono::microseconds(50 * ordo::detail::kTeamSpinMicros));
    after_sleep = other_thread_takes_items() && each_item_once(100, true);
  });
  EXPECT_TRUE(first);
  EXPECT_TRUE(after_sleep);
}

TEST_F(TeamTest, AnItemsExceptionReachesTheCallerAndTheOtherItemsStillRun) {
  std::atomic<int> ran{0};
  bool caught_inside = false;
  run_as_team([&] {
    try {
      parallel_items(50, true, [&](int64_t i) {
        ++ran;
        if (i == 17) throw std::runtime_error("item 17");
      });
    } catch (const std::runtime_error& e) {
      caught_inside = std::string(e.what()) == "item 17";
    }
    // The team still works after the throwing loop.
    EXPECT_TRUE(each_item_once(64, true));
  });
  EXPECT_TRUE(caught_inside);
  EXPECT_EQ(ran.load(), 50);
}

TEST_F(TeamTest, ABodysExceptionLeavesTheRegionAndTheNextTeamWorks) {
  EXPECT_THROW(run_as_team([] {
                 parallel_items(8, true, [](int64_t) {});
                 throw std::invalid_argument("body");
               }),
               std::invalid_argument);
  bool ok = false;
  run_as_team([&] { ok = each_item_once(200, true); });
  EXPECT_TRUE(ok);
}

TEST_F(TeamTest, NestedCallsRunInline) {
  std::vector<int64_t> counts(8 * 8, 0);
  bool inner_team_ran = false;
  run_as_team([&] {
    run_as_team([&] { inner_team_ran = true; });  // already a team: body runs directly
    parallel_items(8, true, [&](int64_t i) {
      const auto self = std::this_thread::get_id();
      parallel_items(8, true, [&](int64_t j) {
        // Inline: the inner items run on the thread that runs the outer one.
        if (std::this_thread::get_id() == self) counts[static_cast<size_t>(i * 8 + j)] += 1;
      });
    });
  });
  EXPECT_TRUE(inner_team_ran);
  EXPECT_EQ(std::accumulate(counts.begin(), counts.end(), int64_t{0}), 64);
  for (int64_t c : counts) EXPECT_EQ(c, 1);
}

TEST_F(TeamTest, InsideAnOpenMpRegionABodyRunsAlone) {
  int bodies = 0;
  std::mutex mu;
#pragma omp parallel num_threads(2)
  {
    run_as_team([&] {
      bool once = each_item_once(40, true);
      std::lock_guard<std::mutex> lock(mu);
      bodies += once ? 1 : 0;
    });
  }
  EXPECT_EQ(bodies, 2);
}

}  // namespace
