// The C ABI: round trips with shapes, zero-copy views, and every error path as a status code
// plus a readable message.
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <utility>

#include "fem/array.hpp"
#include "fem/c_api.h"
#include "fem/csr.hpp"
#include "fem/store.hpp"

namespace {

std::string last() { return fem_last_error(); }

TEST(CApi, PutGetRoundTripWithShape) {
  const double data[6] = {1, 2, 3, 4, 5, 6};
  const int64_t shape[2] = {2, 3};
  uint64_t v1 = 0, v2 = 0;
  ASSERT_EQ(fem_put_f64("capi/A", data, 2, shape, &v1), FEM_OK) << last();
  double out[6] = {};
  ASSERT_EQ(fem_get_f64("capi/A", out, 6), FEM_OK);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(out[i], data[i]);
  fem_entry_info info;
  ASSERT_EQ(fem_info("capi/A", &info), FEM_OK);
  EXPECT_EQ(info.dtype, FEM_F64);
  EXPECT_EQ(info.ndim, 2);
  EXPECT_EQ(info.shape[0], 2);
  EXPECT_EQ(info.shape[1], 3);
  EXPECT_EQ(info.version, v1);
  EXPECT_STREQ(info.type, "fem::Array<f64>");
  ASSERT_EQ(fem_put_f64("capi/A", data, 1, shape, &v2), FEM_OK);
  EXPECT_GT(v2, v1);
  uint64_t v = 0;
  ASSERT_EQ(fem_version("capi/A", &v), FEM_OK);
  EXPECT_EQ(v, v2);
  // Shared with the C++ side.
  EXPECT_EQ(fem::store().version("capi/A"), v2);
  EXPECT_EQ(fem_erase("capi/A"), FEM_OK);
}

TEST(CApi, IntegerArrays) {
  const int32_t a[3] = {1, -2, 3};
  const int64_t b[2] = {int64_t{1} << 40, -5};
  const int64_t n3 = 3, n2 = 2;
  ASSERT_EQ(fem_put_i32("capi/i32", a, 1, &n3, nullptr), FEM_OK);
  ASSERT_EQ(fem_put_i64("capi/i64", b, 1, &n2, nullptr), FEM_OK);
  int32_t oa[3];
  int64_t ob[2];
  ASSERT_EQ(fem_get_i32("capi/i32", oa, 3), FEM_OK);
  ASSERT_EQ(fem_get_i64("capi/i64", ob, 2), FEM_OK);
  EXPECT_EQ(oa[1], -2);
  EXPECT_EQ(ob[0], int64_t{1} << 40);
  fem_erase("capi/i32");
  fem_erase("capi/i64");
}

TEST(CApi, ErrorsAreCodesWithMessages) {
  const double d[2] = {1, 2};
  const int64_t n = 2;
  ASSERT_EQ(fem_put_f64("capi/B", d, 1, &n, nullptr), FEM_OK);
  EXPECT_STREQ(fem_last_error(), "");

  double out[2];
  EXPECT_EQ(fem_get_f64("capi/missing", out, 2), FEM_ERR_NOT_FOUND);
  EXPECT_NE(last().find("'capi/missing'"), std::string::npos) << last();

  EXPECT_EQ(fem_get_f64("capi/b", out, 2), FEM_ERR_NOT_FOUND);
  EXPECT_NE(last().find("capi/B"), std::string::npos) << "nearest key named: " << last();

  int32_t iout[2];
  EXPECT_EQ(fem_get_i32("capi/B", iout, 2), FEM_ERR_WRONG_TYPE);
  EXPECT_NE(last().find("fem::Array<f64>"), std::string::npos) << last();
  EXPECT_NE(last().find("fem::Array<i32>"), std::string::npos) << last();

  EXPECT_EQ(fem_get_f64("capi/B", out, 1), FEM_ERR_BUFFER_TOO_SMALL);
  EXPECT_NE(last().find("2 values"), std::string::npos) << last();

  EXPECT_EQ(fem_put_f64("", d, 1, &n, nullptr), FEM_ERR_INVALID_KEY);
  EXPECT_EQ(fem_put_f64("has space", d, 1, &n, nullptr), FEM_ERR_INVALID_KEY);
  EXPECT_NE(last().find("has space"), std::string::npos) << last();
  EXPECT_EQ(fem_put_f64(nullptr, d, 1, &n, nullptr), FEM_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(fem_put_f64("capi/C", nullptr, 1, &n, nullptr), FEM_ERR_INVALID_ARGUMENT);
  const int64_t neg = -1;
  EXPECT_EQ(fem_put_f64("capi/C", d, 1, &neg, nullptr), FEM_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(fem_put_f64("capi/C", d, 9, &n, nullptr), FEM_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(fem_erase("capi/C"), FEM_ERR_NOT_FOUND);
  fem_entry_info info;
  EXPECT_EQ(fem_info("capi/C", &info), FEM_ERR_NOT_FOUND);
  EXPECT_EQ(fem_info("capi/B", nullptr), FEM_ERR_INVALID_ARGUMENT);

  // None of the failures touched what was stored.
  ASSERT_EQ(fem_get_f64("capi/B", out, 2), FEM_OK);
  EXPECT_EQ(out[1], 2.0);
  EXPECT_STREQ(fem_last_error(), "");
  fem_erase("capi/B");
}

// A shape whose element count overflows 64 bits (3 × 6148914691236517206 = 2^64 + 2 wraps to
// 2), or whose bytes exceed what memory can hold, is refused with the key and the shape named,
// and nothing is stored. An empty shape with a huge extent is an empty array, not an overflow.
TEST(CApi, ShapeWhoseElementCountOverflowsIsRejected) {
  const double d[2] = {1, 2};
  const int32_t i32[2] = {1, 2};
  const int64_t i64[2] = {1, 2};
  const int64_t wraps_to_2[2] = {3, 6148914691236517206};
  const int64_t wraps_to_0[2] = {int64_t{1} << 32, int64_t{1} << 32};
  const int64_t wraps_far[3] = {int64_t{1} << 40, int64_t{1} << 40, 3};
  const int64_t too_many_bytes[1] = {int64_t{1} << 61};  // 2^64 bytes of f64 or i64, 2^63 of i32
  for (const auto& [ndim, shape] : {std::pair{2, wraps_to_2}, std::pair{2, wraps_to_0},
                                    std::pair{3, wraps_far}, std::pair{1, too_many_bytes}}) {
    const std::string extent = std::to_string(shape[0]);
    SCOPED_TRACE(extent);
    EXPECT_EQ(fem_put_f64("capi/overflow", d, ndim, shape, nullptr), FEM_ERR_INVALID_ARGUMENT);
    EXPECT_NE(last().find("'capi/overflow'"), std::string::npos) << last();
    EXPECT_NE(last().find(extent), std::string::npos) << last();
    EXPECT_EQ(fem_put_i64("capi/overflow", i64, ndim, shape, nullptr), FEM_ERR_INVALID_ARGUMENT);
    EXPECT_NE(last().find(extent), std::string::npos) << last();
    EXPECT_EQ(fem_put_i32("capi/overflow", i32, ndim, shape, nullptr), FEM_ERR_INVALID_ARGUMENT);
    EXPECT_NE(last().find(extent), std::string::npos) << last();
    // null data with a shape that wraps to 0 elements is no empty array either
    EXPECT_EQ(fem_put_f64("capi/overflow", nullptr, ndim, shape, nullptr), FEM_ERR_INVALID_ARGUMENT);
    int32_t present = 1;
    ASSERT_EQ(fem_contains("capi/overflow", &present), FEM_OK);
    EXPECT_EQ(present, 0);
  }
  const int64_t empty[2] = {0, std::numeric_limits<int64_t>::max()};
  ASSERT_EQ(fem_put_f64("capi/empty", nullptr, 2, empty, nullptr), FEM_OK) << last();
  fem_entry_info info;
  ASSERT_EQ(fem_info("capi/empty", &info), FEM_OK);
  EXPECT_EQ(info.shape[1], std::numeric_limits<int64_t>::max());
  EXPECT_EQ(fem::store().get<fem::Array<double>>("capi/empty")->size(), 0u);
  fem_erase("capi/empty");
}

// A zero extent makes an empty array, but only when every extent is valid: a negative extent
// after (or before) a zero one is refused like any other, the key and the shape named.
TEST(CApi, ShapeWithAZeroAndANegativeExtentIsRejected) {
  const int64_t zero_then_negative[2] = {0, -1}, negative_then_zero[2] = {-1, 0};
  const int64_t zero_then_huge_negative[3] = {0, 4, std::numeric_limits<int64_t>::min()};
  for (const auto& [ndim, shape] : {std::pair{2, zero_then_negative}, std::pair{2, negative_then_zero},
                                    std::pair{3, zero_then_huge_negative}}) {
    SCOPED_TRACE(fem::shape_string(std::span<const int64_t>(shape, static_cast<std::size_t>(ndim))));
    EXPECT_EQ(fem_put_f64("capi/negative", nullptr, ndim, shape, nullptr), FEM_ERR_INVALID_ARGUMENT);
    EXPECT_NE(last().find("'capi/negative'"), std::string::npos) << last();
    EXPECT_NE(last().find("negative extent"), std::string::npos) << last();
    EXPECT_EQ(fem_put_i64("capi/negative", nullptr, ndim, shape, nullptr), FEM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(fem_put_i32("capi/negative", nullptr, ndim, shape, nullptr), FEM_ERR_INVALID_ARGUMENT);
    int32_t present = 1;
    ASSERT_EQ(fem_contains("capi/negative", &present), FEM_OK);
    EXPECT_EQ(present, 0);
  }
}

// The same check in the C++ type: fem::Array never holds a shape that disagrees with its data.
TEST(Array, ShapeWhoseElementCountOverflowsIsRejected) {
  using fem::Array;
  try {
    Array<double>({3, 6148914691236517206}, {1.0, 2.0});
    ADD_FAILURE() << "a 3 × 6148914691236517206 array of 2 values";
  } catch (const fem::InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("6148914691236517206"), std::string::npos) << e.what();
  }
  EXPECT_THROW(Array<double>({int64_t{1} << 32, int64_t{1} << 32}, {}), fem::InvalidArgument);
  EXPECT_THROW(Array<int32_t>::zeros({int64_t{1} << 32, int64_t{1} << 32}), fem::InvalidArgument);
  EXPECT_THROW(Array<double>::zeros({int64_t{1} << 61}), fem::InvalidArgument);  // 2^64 bytes
  EXPECT_THROW(Array<double>::zeros({-1, -1}), fem::InvalidArgument);            // product 1, still negative
  EXPECT_THROW(Array<double>({2, -1}, {}), fem::InvalidArgument);
  EXPECT_EQ(Array<double>::zeros({0, std::numeric_limits<int64_t>::max()}).size(), 0u);
  EXPECT_EQ(Array<double>::zeros({2, 3}).size(), 6u);
}

TEST(Array, ShapeWithAZeroAndANegativeExtentIsRejected) {
  using fem::Array;
  EXPECT_THROW(Array<double>::zeros({0, -1}), fem::InvalidArgument);
  EXPECT_THROW(Array<double>({0, -1}, {}), fem::InvalidArgument);
  EXPECT_THROW(Array<int32_t>({3, 0, -5}, {}), fem::InvalidArgument);
  EXPECT_THROW(Array<int64_t>::zeros({-1, 0}), fem::InvalidArgument);
  const std::int64_t shape[2] = {0, -1};
  EXPECT_STREQ(fem::element_count(shape, sizeof(double)).problem, "has a negative extent");
  EXPECT_EQ(Array<double>::zeros({0, 7}).size(), 0u);  // a zero with valid extents is still empty
}

TEST(CApi, ViewIsZeroCopyAndOutlivesErase) {
  const double d[3] = {4, 5, 6};
  const int64_t n = 3;
  ASSERT_EQ(fem_put_f64("capi/V", d, 1, &n, nullptr), FEM_OK);
  fem_view view;
  ASSERT_EQ(fem_view_get("capi/V", &view), FEM_OK);
  EXPECT_EQ(view.size, 3);
  EXPECT_EQ(view.dtype, FEM_F64);
  EXPECT_EQ(view.data, fem::store().get<fem::Array<double>>("capi/V")->data().data());
  ASSERT_EQ(fem_erase("capi/V"), FEM_OK);
  EXPECT_EQ(static_cast<const double*>(view.data)[2], 6.0);
  fem_view_release(&view);
  EXPECT_EQ(view.handle, nullptr);
  EXPECT_EQ(fem_view_get("capi/V", &view), FEM_ERR_NOT_FOUND);
}

TEST(CApi, ListStatsBudgetAndCounters) {
  const double d[1] = {1};
  const int64_t n = 1;
  fem_put_f64("capi/list/a", d, 1, &n, nullptr);
  fem_put_f64("capi/list/b", d, 1, &n, nullptr);
  size_t required = 0;
  char small[4];
  EXPECT_EQ(fem_list("capi/list/", small, sizeof small, &required), FEM_ERR_BUFFER_TOO_SMALL);
  EXPECT_EQ(required, std::string("capi/list/a\ncapi/list/b").size() + 1);
  std::string buf(required, '\0');
  ASSERT_EQ(fem_list("capi/list/", buf.data(), buf.size(), &required), FEM_OK);
  EXPECT_STREQ(buf.c_str(), "capi/list/a\ncapi/list/b");
  fem_store_stats st;
  ASSERT_EQ(fem_stats(&st), FEM_OK);
  EXPECT_GE(st.entries, 2u);
  int32_t present = 0;
  ASSERT_EQ(fem_contains("capi/list/a", &present), FEM_OK);
  EXPECT_EQ(present, 1);
  fem::store().count("capi.test", 5);
  int64_t c = 0;
  ASSERT_EQ(fem_counter("capi.test", &c), FEM_OK);
  EXPECT_EQ(c, 5);
  fem_erase("capi/list/a");
  fem_erase("capi/list/b");
  EXPECT_EQ(fem_abi_version(), FEM_C_API_VERSION);
}

TEST(CApi, OpaqueEntriesReportTheirType) {
  fem::store().put("capi/opaque", fem::Array<double>(std::vector<double>{1.0}));
  fem_entry_info info;
  ASSERT_EQ(fem_info("capi/opaque", &info), FEM_OK);
  EXPECT_EQ(info.dtype, FEM_F64);
  fem::store().erase("capi/opaque");
}

TEST(CApi, CsrMatrixPutAndRefused) {
  // [[2, -1, 0], [-1, 2, -1], [0, -1, 2]]
  const int32_t offsets[4] = {0, 2, 5, 7}, columns[7] = {0, 1, 0, 1, 2, 1, 2};
  const double values[7] = {2, -1, -1, 2, -1, -1, 2};
  uint64_t v = 0;
  ASSERT_EQ(fem_put_csr("capi/csr", 3, 3, offsets, columns, values, &v), FEM_OK) << last();
  const auto A = fem::store().get<fem::CsrMatrix>("capi/csr");
  EXPECT_EQ(fem::store().version("capi/csr"), v);
  EXPECT_EQ(A->rows(), 3);
  EXPECT_EQ(A->nnz(), 7u);
  EXPECT_EQ((*A)(1, 2), -1.0);
  EXPECT_EQ((*A)(2, 2), 2.0);
  fem_entry_info info;
  ASSERT_EQ(fem_info("capi/csr", &info), FEM_OK);
  EXPECT_EQ(info.dtype, FEM_OPAQUE);

  // Refused, naming what is wrong; the entry keeps its version.
  const int32_t unsorted[7] = {1, 0, 0, 1, 2, 1, 2};
  EXPECT_EQ(fem_put_csr("capi/csr", 3, 3, offsets, unsorted, values, nullptr), FEM_ERR_INVALID_ARGUMENT);
  EXPECT_NE(last().find("increasing"), std::string::npos) << last();
  const int32_t outside[7] = {0, 1, 0, 1, 3, 1, 2};
  EXPECT_EQ(fem_put_csr("capi/csr", 3, 3, offsets, outside, values, nullptr), FEM_ERR_INVALID_ARGUMENT);
  EXPECT_NE(last().find("outside"), std::string::npos) << last();
  const int32_t shifted[4] = {1, 2, 5, 7};
  EXPECT_EQ(fem_put_csr("capi/csr", 3, 3, shifted, columns, values, nullptr), FEM_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(fem_put_csr("capi/csr", 3, 3, nullptr, columns, values, nullptr), FEM_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(fem_put_csr("capi/csr", 3, 3, offsets, columns, nullptr, nullptr), FEM_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(fem_put_csr("capi/csr", -1, 3, offsets, columns, values, nullptr), FEM_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(fem_put_csr("bad key", 3, 3, offsets, columns, values, nullptr), FEM_ERR_INVALID_KEY);
  EXPECT_EQ(fem::store().version("capi/csr"), v);
  fem::store().erase("capi/csr");
}

}  // namespace
