/* The store's C ABI: string keys, plain arrays, status codes. Usable from C, Python (ctypes),
 * Julia (ccall) or a plug-in built without the C++ headers. Every function returns a
 * fem_status; on failure fem_last_error() gives a readable message for the calling thread. */
#ifndef FEM_C_API_H
#define FEM_C_API_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FEM_C_API_VERSION 1
#define FEM_MAX_NDIM 8

typedef enum fem_status {
  FEM_OK = 0,
  FEM_ERR_NOT_FOUND = 1,        /* no entry under that key */
  FEM_ERR_WRONG_TYPE = 2,       /* the entry holds another type */
  FEM_ERR_INVALID_KEY = 3,      /* empty or malformed key */
  FEM_ERR_INVALID_ARGUMENT = 4, /* null pointer, inconsistent shape, ... */
  FEM_ERR_BUFFER_TOO_SMALL = 5, /* the output buffer cannot hold the result */
  FEM_ERR_PARSE = 6,            /* bad input file */
  FEM_ERR_NUMERICAL = 7,        /* singular matrix, non-finite values */
  FEM_ERR_NOT_COMPILED = 8,     /* feature missing from this build */
  FEM_ERR_INTERNAL = 99         /* anything else (message says what) */
} fem_status;

typedef enum fem_dtype { FEM_F64 = 0, FEM_I32 = 1, FEM_I64 = 2, FEM_OPAQUE = 3 } fem_dtype;

/* What fem_info reports. For entries that are not arrays (meshes, matrices, factorizations),
 * dtype is FEM_OPAQUE and ndim is 0; `type` always holds the type tag. */
typedef struct fem_entry_info {
  uint64_t version;
  uint64_t bytes;
  int32_t dtype;
  int32_t ndim;
  int64_t shape[FEM_MAX_NDIM];
  int32_t evictable;
  char type[64];
} fem_entry_info;

typedef struct fem_store_stats {
  uint64_t entries, bytes, byte_budget;
  uint64_t hits, misses, puts, replacements, erases, evictions, invalidations, computes;
} fem_store_stats;

/* A zero-copy read of an array entry: `data` stays valid until fem_view_release, even if the
 * entry is replaced or erased meanwhile. */
typedef struct fem_view {
  const void* data;
  int64_t size;
  int32_t dtype;
  int32_t ndim;
  int64_t shape[FEM_MAX_NDIM];
  uint64_t version;
  void* handle; /* owned by the library */
} fem_view;

int fem_abi_version(void);
/* Message of this thread's last failed call, "" when the last call succeeded. */
const char* fem_last_error(void);

/* Copy an array of ndim dimensions into the store under key; version may be NULL. */
int fem_put_f64(const char* key, const double* data, int32_t ndim, const int64_t* shape, uint64_t* version);
int fem_put_i32(const char* key, const int32_t* data, int32_t ndim, const int64_t* shape, uint64_t* version);
int fem_put_i64(const char* key, const int64_t* data, int32_t ndim, const int64_t* shape, uint64_t* version);
/* Copy a rows x cols CSR matrix (fem::CsrMatrix) into the store under key: row_offsets holds
 * rows + 1 offsets from 0, col_indices and values row_offsets[rows] entries, the columns of a
 * row strictly increasing. A pattern that is not one is FEM_ERR_INVALID_ARGUMENT naming what is
 * wrong. For the kernels that read matrices by key (solve, eigen); version may be NULL. */
int fem_put_csr(const char* key, int64_t rows, int64_t cols, const int32_t* row_offsets,
                const int32_t* col_indices, const double* values, uint64_t* version);

/* Copy an array entry out; capacity counts elements. FEM_ERR_BUFFER_TOO_SMALL leaves out untouched. */
int fem_get_f64(const char* key, double* out, int64_t capacity);
int fem_get_i32(const char* key, int32_t* out, int64_t capacity);
int fem_get_i64(const char* key, int64_t* out, int64_t capacity);

int fem_view_get(const char* key, fem_view* view);
void fem_view_release(fem_view* view);

int fem_info(const char* key, fem_entry_info* info);
int fem_version(const char* key, uint64_t* version);
int fem_contains(const char* key, int32_t* present);
/* FEM_ERR_NOT_FOUND when the key is absent. */
int fem_erase(const char* key);
/* Every entry erased (values still viewed stay alive until released) and the statistics and
 * named counters reset: a fresh store (Python: fem.store.clear() and fem.store.reset_stats()). */
int fem_clear(void);
/* Keys starting with prefix (NULL or "" for all), separated by '\n', NUL-terminated.
 * *required receives the buffer size needed, terminator included. */
int fem_list(const char* prefix, char* buffer, size_t capacity, size_t* required);
int fem_stats(fem_store_stats* stats);
int fem_set_byte_budget(uint64_t bytes);
/* A named counter kept by the kernels, e.g. "solve.factorizations"; 0 if never counted. */
int fem_counter(const char* name, int64_t* value);

#ifdef __cplusplus
}
#endif
#endif /* FEM_C_API_H */
