// main() for every test executable: MPI and Kokkos up once; only rank 0 prints GoogleTest's
// output, every rank returns its own result (mpiexec fails if any rank fails).
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include "comm/device_select.hpp"
#include "comm/mpi_defaults.hpp"
#include "comm/watchdog.hpp"
#include "common/test_team_shape.hpp"
#include "common/test_watchdog.hpp"

#include "core/compat.hpp"
#include "core/log.hpp"
#include "core/modules.hpp"
#include "kernels/team.hpp"

namespace {
zm::Watchdog* g_watchdog = nullptr;  // main()'s, while it runs the tests
}  // namespace

zm::Watchdog& zm::testing::watchdog() {
  return *g_watchdog;
}

namespace {
// Other ranks stay quiet except for failures, which they print with their rank.
class FailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit FailurePrinter(int rank) : rank_(rank) {}
  void OnTestStart(const ::testing::TestInfo& info) override {
    test_ = std::string(info.test_suite_name()) + "." + info.name();
  }
  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::printf("[rank %d] %s:%d: Failure in %s\n%s\n", rank_,
                result.file_name() ? result.file_name() : "?", result.line_number(), test_.c_str(),
                result.message());
    std::fflush(stdout);
  }

 private:
  int rank_;
  std::string test_;
};
// ZEROMINI_TEAM_SHAPE=TxV: the tests' kernels run with teams of T threads and V vector lanes (the
// GPU code paths, here with OpenMP threads; common/test_team_shape.hpp). A shape the backend
// cannot give is an error, not a silent run with teams of one.
bool check_team_shape_from_environment() {
  const char* text = std::getenv("ZEROMINI_TEAM_SHAPE");
  if (!text) return true;
  const std::optional<zm::kernels::TeamShape> parsed = zm::testing::parse_team_shape(text);
  if (!parsed) {
    std::fprintf(stderr, "ZEROMINI_TEAM_SHAPE=%s: expected THREADSxLANES, e.g. 2x4\n", text);
    return false;
  }
  const zm::kernels::TeamShape shape = zm::testing::test_team_shape();
  const int threads = shape.team_size, lanes = shape.vector_length;
  const int got = zm::kernels::team_policy(shape, 1).team_size();
  if (got != threads) {
    std::fprintf(stderr, "ZEROMINI_TEAM_SHAPE=%s: this backend gives teams of %d thread(s)\n", text,
                 got);
    return false;
  }
  std::printf("[ info ] kernels run with teams of %d threads x %d lanes\n", threads, lanes);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  zm::Watchdog watchdog;  // destroyed after MPI_Finalize, which may release it
  g_watchdog = &watchdog;
  zm::apply_mpi_library_defaults();
  int provided = 0;
  zm::register_modules();
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  zm::set_log_rank(rank);
  // One GPU per rank, as in the app: the local rank modulo the visible GPUs.
  zm::start_kokkos_on_local_device(argc, argv, MPI_COMM_WORLD, watchdog);
  if (!check_team_shape_from_environment()) {
    Kokkos::finalize();
    MPI_Finalize();
    return 2;
  }
  ::testing::InitGoogleTest(&argc, argv);
  if (rank != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new FailurePrinter(rank));
  }
  int result = RUN_ALL_TESTS();
  // Each ctest entry runs its program's cases through a filter (tests/CMakeLists.txt): one that
  // selects nothing, a renamed suite say, must fail rather than pass with nothing tested.
  if (!::testing::GTEST_FLAG(list_tests) &&
      ::testing::UnitTest::GetInstance()->test_to_run_count() == 0) {
    if (rank == 0)
      std::fprintf(stderr, "no test case matches the filter '%s'\n",
                   ::testing::GTEST_FLAG(filter).c_str());
    result = 1;
  }
  // A failure on one rank must fail the job even if rank 0 passed.
  int worst = result;
  MPI_Allreduce(&result, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  watchdog.release();  // collective, while MPI is up (tests arm it)
  Kokkos::finalize();
  {
    watchdog.set_finalize_status(worst);
    zm::BlockingRegion region(watchdog, "MPI_Finalize", zm::kLocalRegion, zm::WaitKind::Finalize);
    MPI_Finalize();
  }
  watchdog.stop();
  return worst;
}
