// Test support: an environment variable set (or unset) for one scope and restored after, e.g.
// FEM_MEMORY_LIMIT to simulate a small machine.
#pragma once

#include <cstdlib>
#include <optional>
#include <string>

namespace fem::testing {

class ScopedEnv {
 public:
  /// `value` nullptr: unset for the scope.
  ScopedEnv(std::string name, const char* value) : name_(std::move(name)) {
    if (const char* old = std::getenv(name_.c_str())) saved_ = old;
    if (value)
      setenv(name_.c_str(), value, 1);
    else
      unsetenv(name_.c_str());
  }
  ~ScopedEnv() {
    if (saved_)
      setenv(name_.c_str(), saved_->c_str(), 1);
    else
      unsetenv(name_.c_str());
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> saved_;
};

/// FEM_MEMORY_LIMIT for one scope.
struct ScopedMemoryLimit : ScopedEnv {
  explicit ScopedMemoryLimit(const char* value) : ScopedEnv("FEM_MEMORY_LIMIT", value) {}
};

}  // namespace fem::testing
