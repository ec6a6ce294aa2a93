// A dense n-dimensional array (row-major), the store's type for plain numeric data: right-hand
// sides, solutions, fields. It is also what the C ABI reads and writes.
#pragma once

#include <fmt/ranges.h>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <numeric>
#include <span>
#include <string>
#include <vector>

#include "fem/error.hpp"
#include "fem/type_name.hpp"

namespace fem {

/// The number of elements of an array of `shape` whose elements take `element_size` bytes, or
/// what makes the shape impossible: a negative extent, or a product of the extents (or its size
/// in bytes) that overflows 64 bits or exceeds what one object can hold (PTRDIFF_MAX bytes).
/// Computed with overflow checks: a wrapped product must never pass for a small array.
struct ElementCount {
  std::size_t count = 0;
  const char* problem = nullptr;  ///< null when the shape is fine
};
inline ElementCount element_count(std::span<const std::int64_t> shape, std::size_t element_size) noexcept {
  // Every extent first: a zero one makes the array empty but excuses no negative one ([0, -1]).
  bool empty = false;
  for (std::int64_t e : shape) {
    if (e < 0) return {0, "has a negative extent"};
    empty = empty || e == 0;
  }
  if (empty) return {0, nullptr};  // empty, however large the other extents
  std::uint64_t n = 1;
  bool overflow = false;
  for (std::int64_t e : shape)
    overflow = overflow || __builtin_mul_overflow(n, static_cast<std::uint64_t>(e), &n);
  if (overflow) return {0, "has more elements than 64 bits can count"};
  if (n > static_cast<std::uint64_t>(std::numeric_limits<std::ptrdiff_t>::max()) / element_size)
    return {0, "has more elements than memory can hold"};
  return {static_cast<std::size_t>(n), nullptr};
}

/// "[3, 4]", for messages.
inline std::string shape_string(std::span<const std::int64_t> shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

template <class T>
class Array {
 public:
  using value_type = T;

  Array() = default;
  /// A 1-D array that takes ownership of `data`.
  explicit Array(std::vector<T> data)
      : shape_{static_cast<std::int64_t>(data.size())}, data_(std::move(data)) {}
  /// An array of the given shape; `data.size()` must equal the product of the extents.
  Array(std::vector<std::int64_t> shape, std::vector<T> data)
      : shape_(std::move(shape)), data_(std::move(data)) {
    const std::size_t n = checked_count(shape_);
    FEM_EXPECTS(n == data_.size(), "array shape {} holds {} elements but {} values were given",
                shape_string(shape_), n, data_.size());
  }
  /// Zero-filled array of the given shape.
  static Array zeros(std::vector<std::int64_t> shape) {
    const std::size_t n = checked_count(shape);
    return Array(std::move(shape), std::vector<T>(n));
  }

  const std::vector<std::int64_t>& shape() const noexcept { return shape_; }
  int ndim() const noexcept { return static_cast<int>(shape_.size()); }
  std::size_t size() const noexcept { return data_.size(); }
  std::span<const T> data() const noexcept { return data_; }
  std::span<T> data() noexcept { return data_; }
  const std::vector<T>& vector() const noexcept { return data_; }
  const T& operator[](std::size_t i) const { return data_[i]; }
  T& operator[](std::size_t i) { return data_[i]; }
  std::size_t bytes() const noexcept {
    return data_.capacity() * sizeof(T) + shape_.capacity() * sizeof(std::int64_t) + sizeof(*this);
  }

 private:
  static std::size_t checked_count(const std::vector<std::int64_t>& shape) {
    FEM_EXPECTS(shape.size() <= 8, "array of {} dimensions: at most 8 are supported", shape.size());
    const ElementCount n = element_count(shape, sizeof(T));
    FEM_EXPECTS(n.problem == nullptr, "array shape {} {}", shape_string(shape), n.problem);
    return n.count;
  }

  std::vector<std::int64_t> shape_;
  std::vector<T> data_;
};

}  // namespace fem

FEM_TYPE_NAME(fem::Array<double>, "fem::Array<f64>");
FEM_TYPE_NAME(fem::Array<std::int32_t>, "fem::Array<i32>");
FEM_TYPE_NAME(fem::Array<std::int64_t>, "fem::Array<i64>");
