// The C ABI: exceptions become status codes plus a thread-local message.
#include "fem/c_api.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <string>

#include "fem/array.hpp"
#include "fem/csr.hpp"
#include "fem/detail/c_api_guard.hpp"
#include "fem/store.hpp"

namespace fem::capi {

namespace {
// The one error slot of every C ABI in the project (see fem/detail/c_api_guard.hpp).
thread_local std::string last_error;
}  // namespace

void set_last_error(std::string message) noexcept {
  try {
    last_error = std::move(message);
  } catch (...) {
    last_error.clear();  // out of memory for the message: at least no stale one
  }
}

void clear_last_error() noexcept { last_error.clear(); }

}  // namespace fem::capi

namespace {

using fem::capi::fail;
using fem::capi::guarded;

std::string_view key_of(const char* key) {
  FEM_EXPECTS(key != nullptr, "key is a null pointer");
  return key;
}

template <class T>
int put(const char* key, const T* data, int32_t ndim, const int64_t* shape, uint64_t* version) {
  return guarded([&] {
    const std::string_view k = key_of(key);
    FEM_EXPECTS(ndim >= 0 && ndim <= FEM_MAX_NDIM, "store key '{}': ndim {} is outside 0..{}", k, ndim,
                FEM_MAX_NDIM);
    FEM_EXPECTS(ndim == 0 || shape != nullptr, "store key '{}': shape is a null pointer", k);
    std::vector<int64_t> s(shape, shape + ndim);
    // The product of the extents with overflow checks: 3 × 6148914691236517206 wraps to 2 in 64
    // bits and must not pass for an array of 2 values.
    const fem::ElementCount n = fem::element_count(s, sizeof(T));
    FEM_EXPECTS(n.problem == nullptr, "store key '{}': shape {} {}", k, fem::shape_string(s), n.problem);
    FEM_EXPECTS(n.count == 0 || data != nullptr, "store key '{}': data is a null pointer", k);
    std::vector<T> values(data, data + n.count);
    const fem::Version v = fem::store().put(k, fem::Array<T>(std::move(s), std::move(values)));
    if (version) *version = v;
    return FEM_OK;
  });
}

template <class T>
int get(const char* key, T* out, int64_t capacity) {
  return guarded([&] {
    const auto a = fem::store().get<fem::Array<T>>(key_of(key));
    if (static_cast<int64_t>(a->size()) > capacity)
      return fail(FEM_ERR_BUFFER_TOO_SMALL, fmt::format("store key '{}' holds {} values, the buffer holds {}",
                                                        key, a->size(), capacity));
    FEM_EXPECTS(out != nullptr || a->size() == 0, "output buffer is a null pointer");
    std::copy(a->data().begin(), a->data().end(), out);
    return static_cast<int>(FEM_OK);
  });
}

fem_dtype dtype_of(std::string_view type) {
  if (type == fem::type_name<fem::Array<double>>::value) return FEM_F64;
  if (type == fem::type_name<fem::Array<int32_t>>::value) return FEM_I32;
  if (type == fem::type_name<fem::Array<int64_t>>::value) return FEM_I64;
  return FEM_OPAQUE;
}

template <class T>
void fill_shape(const fem::Array<T>& a, int32_t& ndim, int64_t* shape) {
  ndim = a.ndim();
  std::copy(a.shape().begin(), a.shape().end(), shape);
}

}  // namespace

extern "C" {

int fem_abi_version(void) { return FEM_C_API_VERSION; }
const char* fem_last_error(void) { return fem::capi::last_error.c_str(); }

int fem_put_f64(const char* key, const double* data, int32_t ndim, const int64_t* shape, uint64_t* version) {
  return put(key, data, ndim, shape, version);
}
int fem_put_i32(const char* key, const int32_t* data, int32_t ndim, const int64_t* shape, uint64_t* version) {
  return put(key, data, ndim, shape, version);
}
int fem_put_i64(const char* key, const int64_t* data, int32_t ndim, const int64_t* shape, uint64_t* version) {
  return put(key, data, ndim, shape, version);
}
int fem_put_csr(const char* key, int64_t rows, int64_t cols, const int32_t* row_offsets,
                const int32_t* col_indices, const double* values, uint64_t* version) {
  return guarded([&] {
    const std::string_view k = key_of(key);
    fem::Store::validate_key(k);
    constexpr int64_t max_index = std::numeric_limits<fem::index_t>::max();
    FEM_EXPECTS(rows >= 0 && cols >= 0 && rows < max_index && cols <= max_index,
                "store key '{}': a CSR matrix of {} x {} does not fit the 32-bit indices", k, rows, cols);
    FEM_EXPECTS(row_offsets != nullptr, "store key '{}': row_offsets is a null pointer", k);
    const int64_t nnz = row_offsets[rows];
    FEM_EXPECTS(row_offsets[0] == 0 && nnz >= 0, "store key '{}': row_offsets run from {} to {}", k,
                row_offsets[0], nnz);
    FEM_EXPECTS(nnz == 0 || (col_indices != nullptr && values != nullptr),
                "store key '{}': col_indices or values is a null pointer", k);
    const auto n = static_cast<std::size_t>(nnz);
    auto pattern = std::make_shared<const fem::CsrPattern>(
        static_cast<fem::index_t>(rows), static_cast<fem::index_t>(cols),
        std::vector<fem::index_t>(row_offsets, row_offsets + rows + 1),
        std::vector<fem::index_t>(col_indices, col_indices + n));  // validated: sizes, order, range
    const fem::Version v =
        fem::store().put(k, fem::CsrMatrix(std::move(pattern), std::vector<double>(values, values + n)));
    if (version) *version = v;
  });
}

int fem_get_f64(const char* key, double* out, int64_t capacity) { return get(key, out, capacity); }
int fem_get_i32(const char* key, int32_t* out, int64_t capacity) { return get(key, out, capacity); }
int fem_get_i64(const char* key, int64_t* out, int64_t capacity) { return get(key, out, capacity); }

int fem_view_get(const char* key, fem_view* view) {
  return guarded([&] {
    FEM_EXPECTS(view != nullptr, "view is a null pointer");
    const std::string_view k = key_of(key);
    auto& s = fem::store();
    fem_view v{};
    const fem_dtype dt = dtype_of(s.type_of(k));
    auto take = [&](auto tag) {
      using A = fem::Array<decltype(tag)>;
      auto got = s.get_versioned<A>(k);
      v.data = got.value->data().data();
      v.size = static_cast<int64_t>(got.value->size());
      v.version = got.version;
      fill_shape(*got.value, v.ndim, v.shape);
      v.handle = new std::shared_ptr<const void>(std::move(got.value));
    };
    switch (dt) {
      case FEM_F64:
        take(double{});
        break;
      case FEM_I32:
        take(int32_t{});
        break;
      case FEM_I64:
        take(int64_t{});
        break;
      default:
        throw fem::TypeError(std::string(k), "an array (fem::Array<f64|i32|i64>)", s.type_of(k));
    }
    v.dtype = dt;
    *view = v;
    return FEM_OK;
  });
}

void fem_view_release(fem_view* view) {
  if (view == nullptr || view->handle == nullptr) return;
  delete static_cast<std::shared_ptr<const void>*>(view->handle);
  *view = fem_view{};
}

int fem_info(const char* key, fem_entry_info* info) {
  return guarded([&] {
    FEM_EXPECTS(info != nullptr, "info is a null pointer");
    const std::string_view k = key_of(key);
    auto& s = fem::store();
    fem_entry_info r{};
    // The shape comes from the value; read both at one version (retry if replaced meanwhile).
    for (;;) {
      const fem::EntryInfo e = s.info(k);
      r = fem_entry_info{};
      r.version = e.version;
      r.bytes = e.bytes;
      r.evictable = e.evictable ? 1 : 0;
      r.dtype = dtype_of(e.type);
      std::snprintf(r.type, sizeof r.type, "%s", e.type.c_str());
      auto shape_at = [&](auto tag) {
        auto got = s.get_versioned<fem::Array<decltype(tag)>>(k);
        fill_shape(*got.value, r.ndim, r.shape);
        return got.version == e.version;
      };
      bool consistent = true;
      switch (r.dtype) {
        case FEM_F64:
          consistent = shape_at(double{});
          break;
        case FEM_I32:
          consistent = shape_at(int32_t{});
          break;
        case FEM_I64:
          consistent = shape_at(int64_t{});
          break;
        default:
          break;
      }
      if (consistent) break;
    }
    *info = r;
    return FEM_OK;
  });
}

int fem_version(const char* key, uint64_t* version) {
  return guarded([&] {
    FEM_EXPECTS(version != nullptr, "version is a null pointer");
    *version = fem::store().version(key_of(key));
    return FEM_OK;
  });
}

int fem_contains(const char* key, int32_t* present) {
  return guarded([&] {
    FEM_EXPECTS(present != nullptr, "present is a null pointer");
    *present = fem::store().contains(key_of(key)) ? 1 : 0;
    return FEM_OK;
  });
}

int fem_erase(const char* key) {
  return guarded([&] {
    const std::string_view k = key_of(key);
    if (!fem::store().erase(k)) fem::store().version(k);  // throws KeyError naming nearby keys
    return FEM_OK;
  });
}

int fem_clear(void) {
  return guarded([] {
    fem::store().clear();
    fem::store().reset_stats();
    return FEM_OK;
  });
}

int fem_list(const char* prefix, char* buffer, size_t capacity, size_t* required) {
  return guarded([&] {
    std::string all;
    for (const auto& e : fem::store().list(prefix ? prefix : "")) {
      if (!all.empty()) all += '\n';
      all += e.key;
    }
    if (required) *required = all.size() + 1;
    if (capacity < all.size() + 1)
      return fail(FEM_ERR_BUFFER_TOO_SMALL,
                  fmt::format("the key list needs {} bytes, the buffer holds {}", all.size() + 1, capacity));
    FEM_EXPECTS(buffer != nullptr, "buffer is a null pointer");
    std::memcpy(buffer, all.c_str(), all.size() + 1);
    return static_cast<int>(FEM_OK);
  });
}

int fem_stats(fem_store_stats* out) {
  return guarded([&] {
    FEM_EXPECTS(out != nullptr, "stats is a null pointer");
    const auto s = fem::store().stats();
    *out = fem_store_stats{s.entries,      s.bytes,  s.byte_budget, s.hits,          s.misses,  s.puts,
                           s.replacements, s.erases, s.evictions,   s.invalidations, s.computes};
    return FEM_OK;
  });
}

int fem_set_byte_budget(uint64_t bytes) {
  return guarded([&] {
    fem::store().set_byte_budget(static_cast<std::size_t>(bytes));
    return FEM_OK;
  });
}

int fem_counter(const char* name, int64_t* value) {
  return guarded([&] {
    FEM_EXPECTS(name != nullptr && value != nullptr, "name and value must not be null pointers");
    *value = fem::store().counter(name);
    return FEM_OK;
  });
}

}  // extern "C"
