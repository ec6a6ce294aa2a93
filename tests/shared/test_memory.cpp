// The memory available: the FEM_MEMORY_LIMIT override and its parser, the measurement, sizes
// as text.
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "fem/error.hpp"
#include "fem/memory.hpp"

namespace {

// FEM_MEMORY_LIMIT set (or unset: nullptr) for one scope, restored after.
class ScopedMemoryLimit {
 public:
  explicit ScopedMemoryLimit(const char* value) {
    if (const char* old = std::getenv("FEM_MEMORY_LIMIT")) saved_ = old;
    if (value)
      setenv("FEM_MEMORY_LIMIT", value, 1);
    else
      unsetenv("FEM_MEMORY_LIMIT");
  }
  ~ScopedMemoryLimit() {
    if (saved_)
      setenv("FEM_MEMORY_LIMIT", saved_->c_str(), 1);
    else
      unsetenv("FEM_MEMORY_LIMIT");
  }
  ScopedMemoryLimit(const ScopedMemoryLimit&) = delete;
  ScopedMemoryLimit& operator=(const ScopedMemoryLimit&) = delete;

 private:
  std::optional<std::string> saved_;
};

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

}  // namespace
