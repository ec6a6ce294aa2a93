// The one exception family of the project: every error a user can get derives from fem::Error
// and says what went wrong and where (the key, the shapes, the file and line).
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <exception>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace fem {

/// Base of every exception thrown by the project.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

/// A precondition on an argument failed (FEM_EXPECTS). `where()` is the source location of the check.
class InvalidArgument : public Error {
 public:
  explicit InvalidArgument(const std::string& what, std::string where = {})
      : Error(what), where_(std::move(where)) {}
  const std::string& where() const noexcept { return where_; }

 private:
  std::string where_;
};

/// Two operands whose shapes do not fit; the message names both shapes.
class DimensionMismatch : public InvalidArgument {
 public:
  using InvalidArgument::InvalidArgument;
};

/// A dependency cycle among store entries: a get_or_compute whose computation asks (directly or
/// through other get_or_compute calls on its thread) for the key it is computing, or an entry
/// published with an input that is derived from it. `cycle()` lists the keys along the cycle,
/// the first one again at the end; the message ends with them ("'a' -> 'b' -> 'a'").
class CycleError : public InvalidArgument {
 public:
  CycleError(std::vector<std::string> cycle, const std::string& what);
  const std::vector<std::string>& cycle() const noexcept { return cycle_; }

 private:
  std::vector<std::string> cycle_;
};

/// A store key that is not present. The message names the key and the nearest keys present.
class KeyError : public Error {
 public:
  KeyError(std::string key, std::vector<std::string> nearest);
  const std::string& key() const noexcept { return key_; }
  const std::vector<std::string>& nearest() const noexcept { return nearest_; }

 private:
  std::string key_;
  std::vector<std::string> nearest_;
};

/// A store entry read as the wrong type. The message names both types.
class TypeError : public Error {
 public:
  TypeError(std::string key, std::string expected, std::string actual);
  const std::string& key() const noexcept { return key_; }
  const std::string& expected() const noexcept { return expected_; }
  const std::string& actual() const noexcept { return actual_; }

 private:
  std::string key_, expected_, actual_;
};

/// An empty or malformed store key.
class InvalidKey : public Error {
 public:
  InvalidKey(std::string key, const std::string& reason);
  const std::string& key() const noexcept { return key_; }

 private:
  std::string key_;
};

/// Bad content in an input file (a mesh, a matrix). Names the file and the line (text) or the
/// byte offset (binary) where the problem was found.
class ParseError : public Error {
 public:
  enum class Position { none, line, byte };
  ParseError(std::string file, Position kind, std::uint64_t position, const std::string& message);
  const std::string& file() const noexcept { return file_; }
  Position position_kind() const noexcept { return kind_; }
  std::uint64_t position() const noexcept { return position_; }

 private:
  std::string file_;
  Position kind_;
  std::uint64_t position_;
};

/// Numerical trouble that makes a result impossible (a singular matrix, NaN input).
class NumericalError : public Error {
 public:
  using Error::Error;
};

/// A feature that was not compiled into this build (CUDA, SuiteSparse, METIS).
class NotCompiled : public Error {
 public:
  explicit NotCompiled(std::string feature, const std::string& what_for);
  const std::string& feature() const noexcept { return feature_; }

 private:
  std::string feature_;
};

/// A CUDA runtime call failed. The message names the call, the error and the source location.
class CudaError : public Error {
 public:
  CudaError(const std::string& what, std::string file, int line)
      : Error(what), file_(std::move(file)), line_(line) {}
  const std::string& file() const noexcept { return file_; }
  int line() const noexcept { return line_; }

 private:
  std::string file_;
  int line_;
};

namespace detail {
[[noreturn]] void throw_invalid_argument(const char* file, int line, const char* condition,
                                         const std::string& message);
}  // namespace detail

/// f() with its outcome agreed: `agree(failure)` is called with f's exception (nullptr on
/// success) and decides what to throw (several processes agreeing on one failure: fem::dist).
template <class F, class Agree>
auto agreed(F&& f, Agree&& agree) -> std::invoke_result_t<F> {
  std::exception_ptr failure;
  if constexpr (std::is_void_v<std::invoke_result_t<F>>) {
    try {
      f();
    } catch (...) {
      failure = std::current_exception();
    }
    agree(failure);
  } else {
    std::invoke_result_t<F> result{};
    try {
      result = f();
    } catch (...) {
      failure = std::current_exception();
    }
    agree(failure);
    return result;
  }
}

}  // namespace fem

/// Check a precondition; on failure throw fem::InvalidArgument with a fmt-formatted message.
/// The message is formatted only when the check fails.
#define FEM_EXPECTS(cond, ...)                                                                      \
  do {                                                                                              \
    if (!(cond)) [[unlikely]]                                                                       \
      ::fem::detail::throw_invalid_argument(__FILE__, __LINE__, #cond, ::fmt::format(__VA_ARGS__)); \
  } while (false)
