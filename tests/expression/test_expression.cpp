// The drivers' expressions: the compiled program against muparser itself (the same arithmetic,
// bit for bit; the transcendental functions within a few ulps), batches against single points,
// the checks at every point of a batch, and the expressions it leaves to muparser.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <muParser.h>

#include <cmath>
#include <string>
#include <vector>

#include "fem/expression/expression.hpp"
#include "fem/error.hpp"

namespace {

using fem::expression::Expression;

// Points of the unit cube, some on its faces, in gdim coordinates.
std::vector<double> points(int gdim, int n) {
  std::vector<double> x;
  for (int i = 0; i < n; ++i)
    for (int d = 0; d < gdim; ++d) x.push_back(std::fmod(0.137 * (i + 1) * (d + 1.3) + 0.05 * d, 1.0));
  x[0] = 0.0;  // a corner
  return x;
}

double muparser_value(const std::string& text, const double* p, int gdim, double t = 0) {
  double x = gdim > 0 ? p[0] : 0, y = gdim > 1 ? p[1] : 0, z = gdim > 2 ? p[2] : 0, tt = t;
  mu::Parser parser;
  parser.DefineVar("x", &x);
  parser.DefineVar("y", &y);
  parser.DefineVar("z", &z);
  parser.DefineVar("t", &tt);
  parser.DefineConst("pi", 3.14159265358979323846);
  parser.SetExpr(text);
  return parser.Eval();
}

double ulps(double a, double b) {
  if (a == b) return 0;
  return std::abs(a - b) / std::abs(std::nextafter(a, 2 * a + 1) - a);
}

TEST(Expression, ArithmeticIsMuparsersBitForBit) {
  const char* texts[] = {"x*y+1",
                         "3*x+2",
                         "1+x*x+2*y*y",
                         "x^2 - y^3/(1+z) + x^4",
                         "-x^2 + (-y)",
                         "(x<0.5 ? y : 2)*3",
                         "x<0.3 ? (y<0.5 ? 1 : 2) : y<0.6 ? 3 : x",
                         "min(x,y) + max(x, y, z) + sum(x,y,1) + avg(x, 2*y)",
                         "abs(x-0.5) + sign(y-0.5) + rint(3*x) + sqrt(x+y)",
                         "x^y + 2^x + (x+1)^0.5",
                         "(x==y || x!=y && x>0.2) + (x<=y) + (x>=y)",
                         "2*pi^2*x*y/7",
                         "1/(1+t) + x*t",
                         "42"};
  for (int gdim : {1, 2, 3}) {
    const auto x = points(gdim, 50);
    for (const char* text : texts) {
      Expression e("--test", text, gdim);
      EXPECT_TRUE(e.compiled()) << text;
      e.set_time(0.25);
      for (int i = 0; i < 50; ++i) {
        const double* p = &x[i * gdim];
        EXPECT_EQ(e(p), muparser_value(text, p, gdim, 0.25))
            << text << " at point " << i << ", gdim " << gdim;
      }
    }
  }
}

TEST(Expression, FunctionsAreWithinAFewUlpsOfMuparser) {
  // One function each (a sum of them could cancel, and ulps of the result say nothing), and the
  // driver's products.
  const char* texts[] = {"2*pi^2*sin(pi*x)*sin(pi*y)",
                         "3*x*cos(3*x)*y",
                         "tan(y/2)",
                         "exp(x-y)",
                         "log(1+x)",
                         "ln(2+y)",
                         "log2(1+x)",
                         "log10(1+y)",
                         "asin(x/2)",
                         "acos(y/2)",
                         "atan(x-y)",
                         "sinh(x)",
                         "cosh(y)",
                         "tanh(x-y)",
                         "asinh(x)",
                         "acosh(1+y)",
                         "atanh(x/2)"};
  const auto x = points(2, 200);
  for (const char* text : texts) {
    const Expression e("--test", text, 2);
    EXPECT_TRUE(e.compiled()) << text;
    for (int i = 0; i < 200; ++i) {
      const double* p = &x[i * 2];
      EXPECT_LE(ulps(e(p), muparser_value(text, p, 2)), 4.0) << text << " at point " << i;
    }
  }
}

TEST(Expression, BatchesGiveTheSinglePointValues) {
  const char* texts[] = {"2*pi^2*sin(pi*x)*sin(pi*y)*exp(z)", "x<0.5 ? cos(y) : log(1+z)",
                         "min(x, y) + sqrt(z)"};
  const int n = 301;  // not a multiple of the program's lanes, nor of four
  const auto x = points(3, n);
  for (const char* text : texts) {
    const Expression e("--test", text, 3);
    std::vector<double> batch(n);
    e.evaluate(n, x.data(), batch.data());
    for (int i = 0; i < n; ++i) EXPECT_EQ(batch[i], e(&x[i * 3])) << text << " at point " << i;
    std::vector<double> through(n);
    e.batch_function()(n, x.data(), through.data());
    EXPECT_EQ(through, batch) << text;
  }
}

TEST(Expression, EveryPointOfABatchIsChecked) {
  const auto x = points(2, 100);
  std::vector<double> v(100);
  // Only points beyond x = 0.9 are bad: the message names the first of them.
  const Expression nan("--source", "x > 0.9 ? sqrt(-1) : 1", 2);
  int first = -1;
  for (int i = 0; i < 100 && first < 0; ++i)
    if (x[2 * i] > 0.9) first = i;
  ASSERT_GE(first, 0);
  try {
    nan.evaluate(100, x.data(), v.data());
    FAIL() << "a NaN passed";
  } catch (const fem::Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("--source"), std::string::npos) << what;
    EXPECT_NE(what.find("NaN"), std::string::npos) << what;
    EXPECT_NE(what.find(fmt::format("(x, y) = ({:.6g}, {:.6g})", x[2 * first], x[2 * first + 1])),
              std::string::npos)
        << what;
  }
  const Expression k("--coefficient all", "x - 0.5", 2, fem::expression::Admissible::positive("the coefficient"));
  EXPECT_THROW(k.evaluate(100, x.data(), v.data()), fem::Error);
  const Expression ok("--coefficient all", "x + 0.5", 2, fem::expression::Admissible::positive("the coefficient"));
  EXPECT_NO_THROW(ok.evaluate(100, x.data(), v.data()));
  EXPECT_THROW(Expression("--source", "1/0", 2), fem::Error);  // a constant: checked when parsed
}

TEST(Expression, WhatTheProgramDoesNotCompileRunsThroughMuparser) {
  const Expression several("--test", "x, 2*y", 2);  // muparser's value: the last one
  EXPECT_FALSE(several.compiled());
  const double p[2] = {0.25, 0.5};
  EXPECT_EQ(several(p), 1.0);
  std::vector<double> v(1);
  several.evaluate(1, p, v.data());
  EXPECT_EQ(v[0], 1.0);
}

}  // namespace
