// Euclidean norms of reported quantities (|u|, von Mises, error norms, residuals) that neither
// overflow to inf nor underflow to 0 while the values themselves are finite, as hypot does.
#pragma once

#include <algorithm>
#include <cmath>
#include <span>

namespace fem {

/// The power of two s by which values of largest magnitude `largest` are divided before they are
/// squared, so that no square overflows and the largest does not underflow: 1 for ordinary
/// magnitudes (2^-400 to 2^400; their sums of squares stay the plain ones, bit for bit), else
/// 2^ilogb(largest) (exact scaling). 1 for 0, NaN and ±inf (their sums say so themselves).
inline double square_scale(double largest) noexcept {
  largest = std::abs(largest);
  if ((largest >= 0x1p-400 && largest <= 0x1p400) || !(largest > 0) || std::isinf(largest)) return 1.0;
  return std::ldexp(1.0, std::clamp(std::ilogb(largest), -1022, 1023));
}

/// sqrt(Σ v_i²), scaled by square_scale(max |v_i|): finite for finite v (unless the norm itself
/// exceeds the largest double), NaN when a value is NaN.
inline double norm2(std::span<const double> v) noexcept {
  double largest = 0;
  for (const double x : v) largest = std::max(largest, std::abs(x));
  const double s = square_scale(largest), r = 1.0 / s;  // r: a power of two too, exact
  double sum = 0;
  for (const double x : v) {
    const double y = x * r;
    sum += y * y;
  }
  return s * std::sqrt(sum);
}

}  // namespace fem
