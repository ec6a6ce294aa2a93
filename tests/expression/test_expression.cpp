// The drivers' expressions: the compiled program against muparser itself (the same arithmetic,
// bit for bit; the transcendental functions within a few ulps), batches against single points,
// the checks at every point of a batch, and the expressions it leaves to muparser.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <muParser.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "fem/error.hpp"
#include "fem/expression/expression.hpp"

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
  const Expression k("--coefficient all", "x - 0.5", 2,
                     fem::expression::Admissible::positive("the coefficient"));
  EXPECT_THROW(k.evaluate(100, x.data(), v.data()), fem::Error);
  const Expression ok("--coefficient all", "x + 0.5", 2,
                      fem::expression::Admissible::positive("the coefficient"));
  EXPECT_NO_THROW(ok.evaluate(100, x.data(), v.data()));
  EXPECT_THROW(Expression("--source", "1/0", 2), fem::Error);  // a constant: checked when parsed
}

TEST(Expression, WhatTheProgramDoesNotCompileRunsThroughMuparser) {
  // Conditions nested deeper than the program keeps pending: muparser evaluates them.
  std::string text = "x";
  for (int k = 0; k < 12; ++k) text = fmt::format("y<{} ? {} : ({})", 0.05 * (k + 1), k, text);
  const Expression deep("--test", text, 2);
  EXPECT_FALSE(deep.compiled());
  const double p[2] = {0.25, 0.5};
  EXPECT_EQ(deep(p), muparser_value(text, p, 2));
  std::vector<double> v(1);
  deep.evaluate(1, p, v.data());
  EXPECT_EQ(v[0], muparser_value(text, p, 2));
}

TEST(Expression, ACommaListWhereOneValueBelongsIsRefused) {
  // muparser would keep the last item ("1,5" is 5); a scalar option gets one value.
  for (const char* text : {"1,5", "x, 2*y", "0,1,2", "min(x,y), 1"}) {
    try {
      Expression("--source", text, 2);
      ADD_FAILURE() << text << " was accepted";
    } catch (const fem::Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("--source"), std::string::npos) << what;
      EXPECT_NE(what.find("expected 1 value"), std::string::npos) << what;
      const int given = text == std::string("0,1,2") ? 3 : 2;
      EXPECT_NE(what.find(fmt::format("got {}", given)), std::string::npos) << what;
    }
  }
  // Commas inside a function's arguments are not a list.
  const double p[2] = {0.25, 0.5};
  EXPECT_EQ(Expression("--source", "min(x, y) + max(x, y, 1)", 2)(p), 1.25);
  EXPECT_EQ(Expression("--source", "sum(1, 5)", 2)(nullptr), 6.0);
}

// The compiled program reads muparser's bytecode, whose meaning muparser does not promise to
// keep. Pinned here to muparser 2.3.3's: an upgrade that changes the tokens an expression
// compiles to fails this test (review ExpressionProgram::compile), instead of running a program
// that reads the tokens wrongly, or falling back to muparser without anyone noticing. The values
// are checked against C++'s own arithmetic, not against muparser.
std::string token_name(const mu::SToken& t) {
  switch (t.Cmd) {
    case mu::cmLE:
      return "LE";
    case mu::cmGE:
      return "GE";
    case mu::cmNEQ:
      return "NEQ";
    case mu::cmEQ:
      return "EQ";
    case mu::cmLT:
      return "LT";
    case mu::cmGT:
      return "GT";
    case mu::cmADD:
      return "ADD";
    case mu::cmSUB:
      return "SUB";
    case mu::cmMUL:
      return "MUL";
    case mu::cmDIV:
      return "DIV";
    case mu::cmPOW:
      return "POW";
    case mu::cmLAND:
      return "LAND";
    case mu::cmLOR:
      return "LOR";
    case mu::cmIF:
      return "IF";
    case mu::cmELSE:
      return "ELSE";
    case mu::cmENDIF:
      return "ENDIF";
    case mu::cmVAR:
      return "VAR";
    case mu::cmVAL:
      return fmt::format("VAL({:g})", t.Val.data2);
    case mu::cmVARPOW2:
      return "VARPOW2";
    case mu::cmVARPOW3:
      return "VARPOW3";
    case mu::cmVARPOW4:
      return "VARPOW4";
    case mu::cmVARMUL:
      return fmt::format("VARMUL({:g},{:g})", t.Val.data, t.Val.data2);
    case mu::cmFUNC:
      return fmt::format("FUNC[{}]", t.Fun.argc);
    case mu::cmEND:
      return "END";
    default:
      return fmt::format("?{}", static_cast<int>(t.Cmd));
  }
}

TEST(Expression, MuparsersBytecodeIsTheOneTheProgramReads) {
  struct Pinned {
    const char* text;
    const char* tokens;
    double (*value)(double x, double y);
  };
  const Pinned pinned[] = {
      {"x+y", "VAR VAR ADD END", [](double x, double y) { return x + y; }},
      {"x-y", "VAR VAR SUB END", [](double x, double y) { return x - y; }},
      {"x*y", "VAR VAR MUL END", [](double x, double y) { return x * y; }},
      {"x/y", "VAR VAR DIV END", [](double x, double y) { return x / y; }},
      {"x^y", "VAR VAR POW END", [](double x, double y) { return std::pow(x, y); }},
      {"x<=y", "VAR VAR LE END", [](double x, double y) { return double(x <= y); }},
      {"x>=y", "VAR VAR GE END", [](double x, double y) { return double(x >= y); }},
      {"x!=y", "VAR VAR NEQ END", [](double x, double y) { return double(x != y); }},
      {"x==y", "VAR VAR EQ END", [](double x, double y) { return double(x == y); }},
      {"x<y", "VAR VAR LT END", [](double x, double y) { return double(x < y); }},
      {"x>y", "VAR VAR GT END", [](double x, double y) { return double(x > y); }},
      {"(x<y)&&(y<0.5)", "VAR VAR LT VAR VAL(0.5) LT LAND END",
       [](double x, double y) { return double(x < y && y < 0.5); }},
      {"(x<y)||(y<0.5)", "VAR VAR LT VAR VAL(0.5) LT LOR END",
       [](double x, double y) { return double(x < y || y < 0.5); }},
      {"2*x+1", "VARMUL(2,1) END", [](double x, double) { return 2 * x + 1; }},
      {"x^2", "VARPOW2 END", [](double x, double) { return x * x; }},
      {"x^3", "VARPOW3 END", [](double x, double) { return x * x * x; }},
      {"x^4", "VARPOW4 END", [](double x, double) { return x * x * x * x; }},
      {"x<y?x:y", "VAR VAR LT IF VAR ELSE VAR ENDIF END", [](double x, double y) { return x < y ? x : y; }},
      {"3.5", "VAL(3.5) END", [](double, double) { return 3.5; }},
      {"-x", "VAR FUNC[1] END", [](double x, double) { return -x; }},
      {"min(x,y)", "VAR VAR FUNC[-2] END", [](double x, double y) { return std::min(x, y); }},
  };
  for (const auto& p : pinned) {
    double x = 0.3, y = 0.7, z = 0, t = 0;
    mu::Parser parser;
    parser.DefineVar("x", &x);
    parser.DefineVar("y", &y);
    parser.DefineVar("z", &z);
    parser.DefineVar("t", &t);
    parser.SetExpr(p.text);
    parser.Eval();  // muparser makes its bytecode at the first evaluation
    const auto& code = parser.GetByteCode();
    std::string tokens;
    for (std::size_t i = 0; i < code.GetSize(); ++i)
      tokens += (tokens.empty() ? "" : " ") + token_name(code.GetBase()[i]);
    EXPECT_EQ(tokens, p.tokens) << p.text << ": muparser " << mu::ParserVersion
                                << " compiles it to other tokens; review ExpressionProgram::compile";
    const Expression e("--test", p.text, 2);
    EXPECT_TRUE(e.compiled()) << p.text;
    for (const auto [px, py] : {std::pair{0.3, 0.7}, {0.7, 0.3}, {0.25, 0.25}, {1.5, 0.4}}) {
      const double point[2] = {px, py}, want = p.value(px, py);
      EXPECT_NEAR(e(point), want, 4 * std::numeric_limits<double>::epsilon() * std::abs(want))
          << p.text << " at (" << px << ", " << py << ")";
    }
  }
}

}  // namespace
