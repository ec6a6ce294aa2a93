// A scratch folder per test: <tmp>/<prefix>_<seed>_<test name>, created (and emptied first when
// `fresh`), so that tests running in parallel never share files.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

namespace fem::testing {

inline std::filesystem::path test_dir(const std::string& prefix, bool fresh = false) {
  const auto* unit = ::testing::UnitTest::GetInstance();
  const std::filesystem::path p =
      std::filesystem::temp_directory_path() /
      (prefix + "_" + std::to_string(unit->random_seed()) + "_" + unit->current_test_info()->name());
  if (fresh) std::filesystem::remove_all(p);
  std::filesystem::create_directories(p);
  return p;
}

}  // namespace fem::testing
