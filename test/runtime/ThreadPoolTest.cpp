//===- ThreadPoolTest.cpp - the executor generated code runs loops on -----===//
//
// The pool is internal to the runtime; this test compiles its source in and
// drives it the way generated code does, through kiln_abi_executor.
//
//===----------------------------------------------------------------------===//
extern "C" {
#include "internal.h"
}

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace {

struct Pool {
  kiln_thread_pool *pool = nullptr;
  explicit Pool(int32_t threads) {
    EXPECT_EQ(kiln_thread_pool_create(threads, &pool), KILN_OK)
        << kiln_last_error();
  }
  ~Pool() { kiln_thread_pool_destroy(pool); }
  void parallelFor(kiln_abi_parallel_body body, void *closure, int64_t count) {
    kiln_abi_executor *executor = kiln_thread_pool_executor(pool);
    executor->parallel_for(executor, body, closure, count);
  }
};

struct Coverage {
  std::vector<std::atomic<int>> hits;
  std::atomic<int> outOfRange{0};
  explicit Coverage(int64_t count) : hits(count) {}
};

void countHits(void *closure, int64_t begin, int64_t end) {
  auto *coverage = static_cast<Coverage *>(closure);
  if (begin < 0 || end > static_cast<int64_t>(coverage->hits.size()) ||
      begin >= end)
    ++coverage->outOfRange;
  for (int64_t i = std::max<int64_t>(begin, 0);
       i < std::min<int64_t>(end, coverage->hits.size()); ++i)
    ++coverage->hits[i];
}

TEST(ThreadPool, CoversEveryIndexExactlyOnce) {
  for (int32_t threads : {1, 2, 3, 8}) {
    Pool pool(threads);
    for (int64_t count : {0, 1, 2, 7, 64, 1000, 100003}) {
      Coverage coverage(count);
      pool.parallelFor(countHits, &coverage, count);
      EXPECT_EQ(coverage.outOfRange, 0) << threads << " threads, " << count;
      for (int64_t i = 0; i < count; ++i)
        ASSERT_EQ(coverage.hits[i], 1) << "index " << i << " of " << count
                                       << ", " << threads << " threads";
    }
  }
}

TEST(ThreadPool, RunsBackToBackLoopsAndLoopsAfterSleeping) {
  Pool pool(2);
  for (int round = 0; round < 2; ++round) {
    for (int loop = 0; loop < 20000; ++loop) {
      Coverage coverage(5);
      pool.parallelFor(countHits, &coverage, 5);
      for (int i = 0; i < 5; ++i)
        ASSERT_EQ(coverage.hits[i], 1) << "loop " << loop;
    }
    // Long enough for the workers to stop spinning and sleep.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

struct ThreadIds {
  std::mutex mutex;
  std::set<std::thread::id> ids;
};

void recordThread(void *closure, int64_t, int64_t) {
  auto *seen = static_cast<ThreadIds *>(closure);
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  std::lock_guard<std::mutex> lock(seen->mutex);
  seen->ids.insert(std::this_thread::get_id());
}

TEST(ThreadPool, SharesWorkAmongItsThreads) {
  for (int32_t threads : {1, 3}) {
    Pool pool(threads);
    ThreadIds seen;
    pool.parallelFor(recordThread, &seen, 12);
    EXPECT_EQ(seen.ids.size(), static_cast<size_t>(threads));
    EXPECT_EQ(seen.ids.count(std::this_thread::get_id()), 1u)
        << "the calling thread takes part";
  }
}

// Each iteration waits until all of the loop's iterations have started, so
// each runs on a thread of its own, and no thread can finish its own
// iteration and take another's before that one started.
struct Rendezvous {
  int64_t count;
  std::atomic<int64_t> arrived{0};
  std::vector<std::thread::id> runner;
  std::atomic<int> timedOut{0};
  explicit Rendezvous(int64_t count) : count(count), runner(count) {}
};

void meetTheOthers(void *closure, int64_t begin, int64_t end) {
  auto *meeting = static_cast<Rendezvous *>(closure);
  for (int64_t i = begin; i < end; ++i) {
    meeting->runner[i] = std::this_thread::get_id();
    ++meeting->arrived;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (meeting->arrived < meeting->count) {
      if (std::chrono::steady_clock::now() > deadline) {
        ++meeting->timedOut;
        return;
      }
      // This machine may have fewer cores than the pool has threads.
      std::this_thread::yield();
    }
  }
}

TEST(ThreadPool, EachThreadTakesItsOwnShareFirst) {
  // So a product's weights stay in the cache of the core that read them:
  // the caller runs the first share, and each worker the same share call
  // after call.
  Pool pool(3);
  std::vector<std::thread::id> first;
  for (int call = 0; call < 50; ++call) {
    Rendezvous meeting(3);
    pool.parallelFor(meetTheOthers, &meeting, 3);
    ASSERT_EQ(meeting.timedOut, 0) << "call " << call;
    EXPECT_EQ(meeting.runner[0], std::this_thread::get_id()) << "call " << call;
    if (first.empty())
      first = meeting.runner;
    EXPECT_EQ(meeting.runner, first) << "call " << call;
  }
  EXPECT_NE(first[1], first[2]);
}

struct Ranges {
  std::mutex mutex;
  std::vector<std::pair<int64_t, int64_t>> seen;
};

void recordRange(void *closure, int64_t begin, int64_t end) {
  auto *ranges = static_cast<Ranges *>(closure);
  std::lock_guard<std::mutex> lock(ranges->mutex);
  ranges->seen.emplace_back(begin, end);
}

TEST(ThreadPool, CutsCountsNearTheInt64LimitWithoutOverflow) {
  for (int32_t threads : {2, 3, 7}) {
    Pool pool(threads);
    for (int64_t count : {INT64_MAX, INT64_MAX - 1, INT64_MAX / 3 + 5}) {
      Ranges ranges;
      pool.parallelFor(recordRange, &ranges, count);
      std::sort(ranges.seen.begin(), ranges.seen.end());
      ASSERT_FALSE(ranges.seen.empty());
      EXPECT_EQ(ranges.seen.front().first, 0);
      EXPECT_EQ(ranges.seen.back().second, count);
      for (size_t i = 0; i < ranges.seen.size(); ++i) {
        EXPECT_LT(ranges.seen[i].first, ranges.seen[i].second);
        if (i > 0)
          EXPECT_EQ(ranges.seen[i].first, ranges.seen[i - 1].second);
      }
    }
  }
}

TEST(ThreadPool, SessionsShareTheProcessWorkers) {
  // Two 3-thread pools alive at once run on the calling thread and two
  // workers, not four.
  Pool first(3), second(3);
  ThreadIds seen;
  for (int round = 0; round < 5; ++round) {
    first.parallelFor(recordThread, &seen, 12);
    second.parallelFor(recordThread, &seen, 12);
  }
  EXPECT_EQ(seen.ids.count(std::this_thread::get_id()), 1u);
  EXPECT_EQ(seen.ids.size(), 3u);
}

TEST(ThreadPool, LoopsFromManyThreadsAtOnce) {
  // Twice as many threads as workers, each with its own pool: every loop
  // still covers its indices exactly once.
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&failures, t] {
      Pool pool(1 + t % 4);
      for (int loop = 0; loop < 2000; ++loop) {
        int64_t count = 1 + (loop * 7 + t) % 50;
        Coverage coverage(count);
        pool.parallelFor(countHits, &coverage, count);
        if (coverage.outOfRange != 0)
          ++failures;
        for (int64_t i = 0; i < count; ++i)
          if (coverage.hits[i] != 1)
            ++failures;
      }
    });
  for (std::thread &thread : threads)
    thread.join();
  EXPECT_EQ(failures, 0);
}

// A loop whose second index blocks its worker until released, so that the
// process's only worker is busy elsewhere.
struct HeldWorker {
  std::thread::id caller;
  std::atomic<bool> entered{false}, released{false};
  std::atomic<int> timedOut{0};
};

bool waitFor(const std::atomic<bool> &flag) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!flag) {
    if (std::chrono::steady_clock::now() > deadline)
      return false;
    std::this_thread::yield();
  }
  return true;
}

void holdTheWorker(void *closure, int64_t begin, int64_t end) {
  auto *held = static_cast<HeldWorker *>(closure);
  for (int64_t i = begin; i < end; ++i) {
    // The caller waits in its own index, so it cannot take the worker's.
    if (std::this_thread::get_id() == held->caller) {
      if (!waitFor(held->entered))
        ++held->timedOut;
      continue;
    }
    held->entered = true;
    if (!waitFor(held->released))
      ++held->timedOut;
  }
}

TEST(ThreadPool, NeverWaitsForAWorkerThatDidNotJoin) {
  Pool busy(2), idle(2);
  HeldWorker held;
  std::thread other([&] {
    held.caller = std::this_thread::get_id();
    busy.parallelFor(holdTheWorker, &held, 2);
  });
  ASSERT_TRUE(waitFor(held.entered));
  // The only worker is inside `busy`'s loop: this one runs on its caller.
  ThreadIds seen;
  idle.parallelFor(recordThread, &seen, 4);
  held.released = true;
  other.join();
  EXPECT_EQ(held.timedOut, 0);
  EXPECT_EQ(seen.ids.size(), 1u);
  EXPECT_EQ(seen.ids.count(std::this_thread::get_id()), 1u);
}

TEST(ThreadPool, CountsTheCpusItMayUse) {
  int32_t cpus = kiln_available_cpus();
  EXPECT_GE(cpus, 1);
  EXPECT_LE(cpus, static_cast<int32_t>(std::thread::hardware_concurrency()));
}

} // namespace
