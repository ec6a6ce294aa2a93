// Test support: run the built fem executable (FEM_EXECUTABLE) with its output captured in files
// of a per-test temporary folder.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

namespace fem::testing {

struct CliResult {
  int status = -1;
  std::string out, err;
};

/// A fresh folder for the running test, named after the process and the test.
inline std::filesystem::path temp_dir() {
  const std::filesystem::path p = std::filesystem::temp_directory_path() /
                                  ("fem_test_apps_" + std::to_string(::getpid()) + "_" +
                                   ::testing::UnitTest::GetInstance()->current_test_info()->name());
  std::filesystem::create_directories(p);
  return p;
}

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// `fem <args>` with stdout and stderr captured (in `dir`) and the exit status.
inline CliResult fem_run(const std::string& args, const std::filesystem::path& dir) {
  const auto out = dir / "stdout.txt", err = dir / "stderr.txt";
  const std::string cmd =
      std::string("'") + FEM_EXECUTABLE + "' " + args + " >'" + out.string() + "' 2>'" + err.string() + "'";
  const int rc = std::system(cmd.c_str());
  CliResult r;
  r.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

/// The --json summary of a run that must succeed (null, with a test failure, when it does not).
inline nlohmann::json run_json(const std::string& args, const std::filesystem::path& dir) {
  const CliResult r = fem_run(args + " --json -", dir);
  EXPECT_EQ(r.status, 0) << args << "\n" << r.err;
  if (r.status != 0) return {};
  return nlohmann::json::parse(r.out);
}

/// A failed run whose error is one line naming `name`.
inline void expect_one_line_naming(const CliResult& r, const std::string& name) {
  EXPECT_NE(r.status, 0);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find(name), std::string::npos) << r.err;
}

}  // namespace fem::testing
