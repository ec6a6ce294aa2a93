// A dense n-dimensional array (row-major), the store's type for plain numeric data: right-hand
// sides, solutions, fields. It is also what the C ABI reads and writes.
#pragma once

#include <cstdint>
#include <numeric>
#include <span>
#include <vector>

#include "fem/error.hpp"
#include "fem/type_name.hpp"

namespace fem {

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
    FEM_EXPECTS(shape_.size() <= 8, "array of {} dimensions: at most 8 are supported", shape_.size());
    std::int64_t n = 1;
    for (std::int64_t e : shape_) {
      FEM_EXPECTS(e >= 0, "array extent {} is negative", e);
      n *= e;
    }
    FEM_EXPECTS(static_cast<std::size_t>(n) == data_.size(),
                "array shape holds {} elements but {} values were given", n, data_.size());
  }
  /// Zero-filled array of the given shape.
  static Array zeros(std::vector<std::int64_t> shape) {
    std::int64_t n = std::accumulate(shape.begin(), shape.end(), std::int64_t{1}, std::multiplies<>());
    FEM_EXPECTS(n >= 0, "array extents must be non-negative");
    return Array(std::move(shape), std::vector<T>(static_cast<std::size_t>(n)));
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
  std::vector<std::int64_t> shape_;
  std::vector<T> data_;
};

}  // namespace fem

FEM_TYPE_NAME(fem::Array<double>, "fem::Array<f64>");
FEM_TYPE_NAME(fem::Array<std::int32_t>, "fem::Array<i32>");
FEM_TYPE_NAME(fem::Array<std::int64_t>, "fem::Array<i64>");
