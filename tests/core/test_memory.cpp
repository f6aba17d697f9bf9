#include <gtest/gtest.h>

#include "core/memory.hpp"

TEST(Memory, TrackedBuffersAreCountedWhileAliveAndPeaksKept) {
  zm::MemoryLedger ledger;
  const size_t before = ledger.current(zm::MemCategory::Workspace);
  {
    zm::TrackedBuffer<float> a("a", zm::MemCategory::Workspace, 1000, &ledger);
    EXPECT_EQ(ledger.current(zm::MemCategory::Workspace), before + 4000);
    zm::TrackedBuffer<float> b = std::move(a);  // moving does not count twice
    EXPECT_EQ(ledger.current(zm::MemCategory::Workspace), before + 4000);
    EXPECT_EQ(a.bytes(), 0u);
    b.release();
    EXPECT_EQ(ledger.current(zm::MemCategory::Workspace), before);
  }
  EXPECT_EQ(ledger.current(zm::MemCategory::Workspace), before);
  EXPECT_GE(ledger.peak(zm::MemCategory::Workspace), before + 4000);
  ledger.reset_peaks();
  EXPECT_EQ(ledger.peak(zm::MemCategory::Workspace), before);
}
