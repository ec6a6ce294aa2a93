// Test support: run the built fem executable (FEM_EXECUTABLE) with its output captured in files
// of a per-test temporary folder.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace fem::testing {

struct CliResult {
  int status = -1;
  std::string out, err;
};

/// A fresh folder for the running test, named after the process and the test.
inline std::filesystem::path temp_dir() {
  const std::filesystem::path p =
      std::filesystem::temp_directory_path() / ("fem_test_apps_" + std::to_string(::getpid()) + "_" +
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

}  // namespace fem::testing
