// CSR patterns: validation names the row, fingerprints tell patterns apart, products are right.
#include <gtest/gtest.h>

#include "fem/csr.hpp"
#include "fem/error.hpp"
#include "fem/store.hpp"

namespace {

std::shared_ptr<const fem::CsrPattern> tridiagonal(int n) {
  std::vector<fem::index_t> off{0}, col;
  for (int r = 0; r < n; ++r) {
    for (int c = r - 1; c <= r + 1; ++c)
      if (c >= 0 && c < n) col.push_back(c);
    off.push_back(static_cast<fem::index_t>(col.size()));
  }
  return std::make_shared<const fem::CsrPattern>(n, n, off, col);
}

TEST(CsrPattern, FindAndRows) {
  auto p = tridiagonal(5);
  EXPECT_EQ(p->nnz(), 13u);
  EXPECT_EQ(p->find(0, 0), 0);
  EXPECT_EQ(p->find(2, 3), 7);
  EXPECT_EQ(p->find(0, 4), -1);
  EXPECT_EQ(p->row(4).size(), 2u);
}

TEST(CsrPattern, ValidationNamesTheRow) {
  EXPECT_THROW(fem::CsrPattern(2, 2, {0, 1}, {0}), fem::InvalidArgument);        // offsets size
  EXPECT_THROW(fem::CsrPattern(2, 2, {1, 1, 2}, {0, 1}), fem::InvalidArgument);  // start
  EXPECT_THROW(fem::CsrPattern(2, 2, {0, 1, 3}, {0, 1}), fem::InvalidArgument);  // end
  try {
    fem::CsrPattern(2, 2, {0, 2, 3}, {1, 0, 1});
    FAIL();
  } catch (const fem::InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("row 0"), std::string::npos) << e.what();
  }
  try {
    fem::CsrPattern(2, 2, {0, 1, 2}, {0, 5});
    FAIL();
  } catch (const fem::InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("row 1"), std::string::npos) << e.what();
  }
}

TEST(CsrPattern, FingerprintSeparatesPatternsWithEqualNnz) {
  // Same size and nnz, different structure.
  fem::CsrPattern a(3, 3, {0, 2, 3, 4}, {0, 1, 1, 2});
  fem::CsrPattern b(3, 3, {0, 2, 3, 4}, {0, 2, 1, 2});
  fem::CsrPattern c(3, 3, {0, 2, 3, 4}, {0, 1, 1, 2});
  EXPECT_NE(a.fingerprint(), b.fingerprint());
  EXPECT_FALSE(a.same_structure(b));
  EXPECT_EQ(a.fingerprint(), c.fingerprint());
  EXPECT_TRUE(a.same_structure(c));
}

TEST(CsrPattern, TrustedPatternsEqualCheckedOnes) {
  // The builders' unchecked constructor: same structure, same (lazily computed) fingerprint.
  const fem::CsrPattern checked(3, 3, {0, 2, 3, 4}, {0, 1, 1, 2});
  const fem::CsrPattern trusted = fem::CsrPattern::trusted(3, 3, {0, 2, 3, 4}, {0, 1, 1, 2});
  EXPECT_EQ(trusted.fingerprint(), checked.fingerprint());
  EXPECT_EQ(trusted.fingerprint(), trusted.fingerprint()) << "computed once, then kept";
  EXPECT_TRUE(trusted.same_structure(checked));
  EXPECT_EQ(trusted.find(1, 1), checked.find(1, 1));
}

TEST(CsrMatrix, MultiplyAndTranspose) {
  auto p = tridiagonal(4);
  std::vector<double> v;
  for (int r = 0; r < 4; ++r)
    for (auto c : p->row(r)) v.push_back(c == r ? 2.0 : (c > r ? -1.0 : -0.5));
  fem::CsrMatrix A(p, v);
  std::vector<double> x{1, 2, 3, 4}, y(4), z(4);
  A.multiply(x, y);
  EXPECT_DOUBLE_EQ(y[0], 2 * 1 - 1 * 2);
  EXPECT_DOUBLE_EQ(y[3], -0.5 * 3 + 2 * 4);
  A.multiply_transpose(x, z);
  EXPECT_DOUBLE_EQ(z[0], 2 * 1 - 0.5 * 2);
  EXPECT_DOUBLE_EQ(A(1, 2), -1.0);
  EXPECT_DOUBLE_EQ(A(0, 3), 0.0);
  std::vector<double> wrong(3);
  EXPECT_THROW(A.multiply(wrong, y), fem::DimensionMismatch);
  EXPECT_THROW(fem::CsrMatrix(p, std::vector<double>(3)), fem::InvalidArgument);
}

TEST(CsrMatrix, SharesItsPatternThroughTheStore) {
  fem::Store s;
  auto p = tridiagonal(3);
  s.put("A", fem::CsrMatrix(p, std::vector<double>(p->nnz(), 1.0)));
  s.put("A", fem::CsrMatrix(p, std::vector<double>(p->nnz(), 2.0)));
  EXPECT_EQ(&s.get<fem::CsrMatrix>("A")->pattern(), p.get());
}

}  // namespace
