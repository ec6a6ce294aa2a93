// The C ABI of the table op (fem/gpu/c_api.h): tables as store entries, ops by key.
#include "fem/gpu/c_api.h"

#include <fmt/format.h>

#include <memory>
#include <string>

#include "fem/detail/c_api_guard.hpp"
#include "fem/gpu/table.hpp"
#include "fem/store.hpp"

namespace {

using fem::capi::guarded;
using fem::capi::key_arg;
using fem::gpu::Table;

std::shared_ptr<const Table> table_at(const char* key) {
  return fem::store().get<Table>(std::string(key_arg(key)));
}

std::size_t count(int64_t n, const char* what) {
  FEM_EXPECTS(n >= 0, "{}: n is {}", what, n);
  return static_cast<std::size_t>(n);
}

fem::gpu::Executor executor_of(int32_t device) {
  switch (device) {
    case FEM_DEVICE_HOST:
      return fem::gpu::Executor::host();
    case FEM_DEVICE_DEBUG:
      return fem::gpu::Executor::debug_device();
    case FEM_DEVICE_CUDA:
      return fem::gpu::Executor::cuda();
    default:
      throw fem::InvalidArgument(fmt::format(
          "fem_table_create: device {} is none of FEM_DEVICE_HOST, FEM_DEVICE_DEBUG, FEM_DEVICE_CUDA",
          device));
  }
}

}  // namespace

extern "C" {

int fem_table_create(const char* key, int32_t key_dtype, int32_t value_dtype, int64_t expected_size,
                     double load_factor, int32_t device) {
  return guarded([&] {
    const std::string k(key_arg(key));
    FEM_EXPECTS(key_dtype == FEM_I32 || key_dtype == FEM_I64 || key_dtype == FEM_TABLE_KEY_PAIR,
                "fem_table_create: key dtype {} is none of FEM_I32, FEM_I64, FEM_TABLE_KEY_PAIR", key_dtype);
    FEM_EXPECTS(value_dtype == FEM_I32 || value_dtype == FEM_I64 || value_dtype == FEM_F64,
                "fem_table_create: value dtype {} is none of FEM_I32, FEM_I64, FEM_F64", value_dtype);
    auto table = std::make_shared<const Table>(
        executor_of(device), static_cast<Table::Key>(key_dtype), static_cast<Table::Value>(value_dtype),
        count(expected_size, "fem_table_create"), load_factor == 0 ? 0.5 : load_factor);
    fem::store().put(k, std::move(table));
  });
}

int fem_table_insert(const char* key, const void* keys, const void* values, int64_t n) {
  return guarded([&] { table_at(key)->insert(keys, values, count(n, "fem_table_insert")); });
}

int fem_table_insert_unique(const char* key, const void* keys, void* ids, uint8_t* is_new, int64_t n) {
  return guarded(
      [&] { table_at(key)->insert_unique(keys, ids, is_new, count(n, "fem_table_insert_unique")); });
}

int fem_table_find(const char* key, const void* keys, void* values, uint8_t* found, int64_t n) {
  return guarded([&] { table_at(key)->find(keys, values, found, count(n, "fem_table_find")); });
}

int fem_table_size(const char* key, int64_t* size) {
  return guarded([&] {
    FEM_EXPECTS(size != nullptr, "fem_table_size: size is a null pointer");
    *size = static_cast<int64_t>(table_at(key)->size());
  });
}

int fem_table_export(const char* key, void* keys, void* values, int64_t capacity, int64_t* n) {
  return guarded([&]() -> int {
    FEM_EXPECTS(n != nullptr, "fem_table_export: n is a null pointer");
    const auto t = table_at(key);
    const std::size_t size = t->export_entries(keys, values, count(capacity, "fem_table_export"));
    *n = static_cast<int64_t>(size);
    if (size <= static_cast<std::size_t>(capacity)) return FEM_OK;
    return fem::capi::fail(
        FEM_ERR_BUFFER_TOO_SMALL,
        fmt::format("fem_table_export '{}': {} entries, buffers of {}", key, size, capacity));
  });
}

int fem_table_types(const char* key, int32_t* key_dtype, int32_t* value_dtype) {
  return guarded([&] {
    FEM_EXPECTS(key_dtype && value_dtype, "fem_table_types: a null pointer");
    const auto t = table_at(key);
    *key_dtype = static_cast<int32_t>(t->key_type());
    *value_dtype = static_cast<int32_t>(t->value_type());
  });
}

}  // extern "C"
