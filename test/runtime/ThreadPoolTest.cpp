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

#include <atomic>
#include <chrono>
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

TEST(ThreadPool, CountsTheCpusItMayUse) {
  int32_t cpus = kiln_available_cpus();
  EXPECT_GE(cpus, 1);
  EXPECT_LE(cpus, static_cast<int32_t>(std::thread::hardware_concurrency()));
}

} // namespace
