// The memory available: the FEM_MEMORY_LIMIT override and its parser, the measurement, sizes
// as text.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <string>

#include "../support/scoped_env.hpp"
#include "fem/error.hpp"
#include "fem/memory.hpp"

namespace {

using fem::testing::ScopedMemoryLimit;

TEST(Memory, ParseBytesWithSuffixes) {
  using fem::parse_bytes;
  EXPECT_EQ(parse_bytes("0"), 0u);
  EXPECT_EQ(parse_bytes("1073741824"), 1073741824u);
  EXPECT_EQ(parse_bytes("512"), 512u);
  EXPECT_EQ(parse_bytes("512B"), 512u);
  EXPECT_EQ(parse_bytes("64K"), 64u << 10);
  EXPECT_EQ(parse_bytes("64 KiB"), 64u << 10);
  EXPECT_EQ(parse_bytes("512M"), 512u << 20);
  EXPECT_EQ(parse_bytes("512mb"), 512u << 20);
  EXPECT_EQ(parse_bytes("2G"), std::uint64_t{2} << 30);
  EXPECT_EQ(parse_bytes("1.5G"), std::uint64_t{3} << 29);
  EXPECT_EQ(parse_bytes(" 3T "), std::uint64_t{3} << 40);
  EXPECT_EQ(parse_bytes("1P"), std::uint64_t{1} << 50);
  for (const char* bad : {"", "  ", "M", "-1G", "+5", "12 parsecs", "1.5X", "1GG", "1Gi", "nan", "inf",
                          "0x10", "99999999999T"}) {
    try {
      parse_bytes(bad, "FEM_MEMORY_LIMIT");
      ADD_FAILURE() << "'" << bad << "' accepted";
    } catch (const fem::InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("FEM_MEMORY_LIMIT"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(std::string("'") + bad + "'"), std::string::npos) << e.what();
    }
  }
}

TEST(Memory, EnvironmentOverrideIsTheFigure) {
  {
    const ScopedMemoryLimit limit("256M");
    const auto m = fem::memory_available();
    EXPECT_EQ(m.bytes, std::uint64_t{256} << 20);
    EXPECT_EQ(m.source, "FEM_MEMORY_LIMIT");
    EXPECT_EQ(fem::available_memory(), std::uint64_t{256} << 20);
  }
  {
    const ScopedMemoryLimit limit("2 TiB");  // larger than the machine: the checks are off in effect
    EXPECT_EQ(fem::available_memory(), std::uint64_t{2} << 40);
  }
  {
    const ScopedMemoryLimit bad("lots");
    EXPECT_THROW(fem::available_memory(), fem::InvalidArgument);
  }
  {
    const ScopedMemoryLimit empty("");  // empty: not set
    EXPECT_NE(fem::memory_available().source, "FEM_MEMORY_LIMIT");
  }
}

TEST(Memory, MeasuredOnThisMachine) {
  const ScopedMemoryLimit none(nullptr);
  const auto m = fem::memory_available();
  // Some memory is left to a process that runs tests, and no more than the machine has.
  EXPECT_GT(m.bytes, std::uint64_t{16} << 20) << m.source;
  EXPECT_LT(m.bytes, std::uint64_t{1} << 50) << m.source;
  EXPECT_FALSE(m.source.empty());
  EXPECT_NE(m.source, "FEM_MEMORY_LIMIT");
}

TEST(Memory, FormatBytes) {
  EXPECT_EQ(fem::format_bytes(812), "812 B");
  EXPECT_EQ(fem::format_bytes(1 << 20), "1.00 MiB");
  EXPECT_EQ(fem::format_bytes(3.4 * (1 << 20)), "3.40 MiB");
  EXPECT_EQ(fem::format_bytes(21.34 * (1 << 30)), "21.3 GiB");
  EXPECT_EQ(fem::format_bytes(130.0 * (1 << 30)), "130 GiB");
  EXPECT_EQ(fem::format_bytes(1.2 * (std::uint64_t{1} << 40)), "1.20 TiB");
}

// A cgroup's hard limit is v2 memory.max (v1 memory.limit_in_bytes); exceeding memory.high only
// throttles the process (the kernel reclaims harder), so it limits nothing here. Fake cgroup
// folders with the files the kernel would show.
TEST(Memory, CgroupMemoryHighIsNotALimitOnlyMemoryMaxIs) {
  std::string pattern = (std::filesystem::temp_directory_path() / "fem_cgroup_XXXXXX").string();
  ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
  const std::filesystem::path dir = pattern;
  const auto put = [&](const char* name, const std::string& text) { std::ofstream(dir / name) << text; };
  constexpr std::uint64_t GiB = std::uint64_t{1} << 30, MiB = std::uint64_t{1} << 20;
  constexpr std::uint64_t none = std::numeric_limits<std::uint64_t>::max();
  put("memory.current", std::to_string(2 * GiB) + "\n");
  put("memory.stat", "anon 1073741824\ninactive_file " + std::to_string(512 * MiB) + "\nactive_file 0\n");

  // memory.high below the usage, no memory.max: no limit at all
  put("memory.max", "max\n");
  put("memory.high", std::to_string(GiB) + "\n");
  auto m = fem::detail::cgroup_memory_available(dir.string(), true);
  EXPECT_EQ(m.bytes, none) << m.source;
  EXPECT_EQ(m.source.find("memory.high"), std::string::npos) << m.source;

  // both: memory.max − (current − inactive_file), whatever memory.high says
  put("memory.max", std::to_string(4 * GiB) + "\n");
  m = fem::detail::cgroup_memory_available(dir.string(), true);
  EXPECT_EQ(m.bytes, 4 * GiB - (2 * GiB - 512 * MiB));
  EXPECT_EQ(m.source, "cgroup memory.max");

  // v1: memory.limit_in_bytes − (usage − total_inactive_file)
  put("memory.limit_in_bytes", std::to_string(3 * GiB) + "\n");
  put("memory.usage_in_bytes", std::to_string(2 * GiB) + "\n");
  put("memory.stat", "total_inactive_file " + std::to_string(GiB) + "\n");
  m = fem::detail::cgroup_memory_available(dir.string(), false);
  EXPECT_EQ(m.bytes, 2 * GiB);
  EXPECT_EQ(m.source, "cgroup memory.limit_in_bytes");
  std::filesystem::remove_all(dir);
}

}  // namespace
