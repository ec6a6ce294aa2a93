// fem/norm.hpp: Euclidean norms of finite values are finite and not rounded to zero, whatever
// their magnitude, and bit for bit the plain sum of squares for ordinary magnitudes.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "fem/norm.hpp"

namespace {

TEST(Norm, FiniteValuesNeitherOverflowNorUnderflow) {
  for (const double size : {1e300, 1e-300, 1e-320, std::numeric_limits<double>::max() / 8}) {
    const std::vector<double> v{3 * size, -4 * size};
    // 5·size is representable for all these sizes; the subnormal one only to within its spacing.
    const double expected = 5 * size;
    EXPECT_NEAR(fem::norm2(v) / expected, 1.0, size < 1e-310 ? 1e-3 : 1e-15) << size;
  }
  // The largest double itself, twice: the norm √2·max overflows, and says so.
  const double max = std::numeric_limits<double>::max();
  EXPECT_TRUE(std::isinf(fem::norm2(std::vector<double>{max, max})));
}

TEST(Norm, OrdinaryMagnitudesAreThePlainSumOfSquares) {
  const std::vector<double> v{0.1, -2.5, 3e-5, 7.0, 1e10};
  double s = 0;
  for (const double x : v) s += x * x;
  EXPECT_EQ(fem::norm2(v), std::sqrt(s));
  EXPECT_EQ(fem::square_scale(1e10), 1.0);
  EXPECT_EQ(fem::norm2(std::vector<double>{}), 0.0);
  EXPECT_EQ(fem::norm2(std::vector<double>{0.0, -0.0}), 0.0);
}

TEST(Norm, NonFiniteValuesAreNotHidden) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_TRUE(std::isnan(fem::norm2(std::vector<double>{1e300, nan})));
  EXPECT_TRUE(std::isnan(fem::norm2(std::vector<double>{nan, 0.0})));
  EXPECT_TRUE(std::isinf(fem::norm2(std::vector<double>{1.0, -inf})));
  // The scale is an exact power of two.
  const double s = fem::square_scale(3e300);
  int exponent = 0;
  EXPECT_EQ(std::frexp(s, &exponent), 0.5);
}

}  // namespace
