// GoogleTest under MPI: every rank runs every test in the same order (the tests are collective),
// only rank 0 prints, and the job fails when any rank failed. Tests use EXPECT_* (never ASSERT_*
// before a collective call), so a failed check on one rank cannot leave the others waiting.
#include <gtest/gtest.h>

#include "fem/dist/session.hpp"

int main(int argc, char** argv) {
  fem::dist::Session session(argc, argv);
  ::testing::InitGoogleTest(&argc, argv);
  if (session.rank() != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  const int failed = RUN_ALL_TESTS() != 0 ? 1 : 0;
  int any = 0;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, session.comm());
  if (any && session.rank() == 0 && !failed) std::fprintf(stderr, "a test failed on another rank\n");
  return any;
}
