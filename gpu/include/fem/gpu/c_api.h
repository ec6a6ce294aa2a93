/* The connectivity hash table as an op (libfem_gpu's C ABI): a table is a store entry under a
 * key (fem_table_create), and every op takes that key first, on batches of caller arrays.
 * Status codes and fem_last_error() as in fem/c_api.h; a failed call changes nothing. Loadable
 * alone with dlopen(RTLD_LOCAL) (it needs libfem_shared, which it links). docs/hash_table.md.
 *
 *   fem_table_create("edges", FEM_I64, FEM_I32, 1000, 0.5, FEM_DEVICE_HOST);
 *   fem_table_insert_unique("edges", keys, ids, is_new, n);   // dedupe and number
 *   fem_table_find("edges", queries, ids, found, m);
 */
#ifndef FEM_GPU_C_API_H
#define FEM_GPU_C_API_H

#include <stdint.h>

#include "fem/c_api.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Key types: FEM_I32, FEM_I64 (fem_dtype), or two 64-bit halves per key (low, high: the
 * connectivity's 128-bit edge and face keys). The key -1 is reserved, and for pairs a high half
 * of -1 or -2 (empty and claimed slots).
 * Value types: FEM_I32, FEM_I64, FEM_F64. */
#define FEM_TABLE_KEY_PAIR 16

/* Where a table lives: the host, the debug device (the device code path on the CPU), or CUDA.
 *
 * The arrays of an op are aligned to their element size and are either all host memory or, for
 * a table on the CUDA device, all device (or managed) memory of that device, told apart with
 * cudaPointerGetAttributes: device arrays are used where they are (the keys checked there, the
 * op returning when its work on the table's stream is done; work of yours that writes them must
 * be complete first), host arrays are copied over in chunks. int64 and pair keys and the values
 * are used in place; int32 keys are sign-extended (on the device for device arrays). */
typedef enum fem_device { FEM_DEVICE_HOST = 0, FEM_DEVICE_DEBUG = 1, FEM_DEVICE_CUDA = 2 } fem_device;

/* A table for about expected_size keys, growing past load_factor (0.05 .. 0.9; 0: 0.5),
 * published under `key` (replacing what was there: holders of the old table keep it). */
int fem_table_create(const char* key, int32_t key_dtype, int32_t value_dtype, int64_t expected_size,
                     double load_factor, int32_t device);
/* Insert or assign keys[i] -> values[i], i < n. */
int fem_table_insert(const char* key, const void* keys, const void* values, int64_t n);
/* Dedupe and number: ids[i] is the id of keys[i], new keys numbered size, size + 1, ... in order
 * of first occurrence; is_new[i] (may be NULL) whether this occurrence introduced it. Integer
 * values only. */
int fem_table_insert_unique(const char* key, const void* keys, void* ids, uint8_t* is_new, int64_t n);
/* values[i] = the value of keys[i]; found[i] (may be NULL) 1 or 0; where absent values[i] is all
 * ones (-1, or a NaN for FEM_F64). */
int fem_table_find(const char* key, const void* keys, void* values, uint8_t* found, int64_t n);
/* The number of keys (a counter, no scan). */
int fem_table_size(const char* key, int64_t* size);
/* The entries sorted by key (pairs by high half, then low) into arrays of `capacity` entries;
 * *n the number of entries. FEM_ERR_BUFFER_TOO_SMALL (nothing written) when capacity < *n. */
int fem_table_export(const char* key, void* keys, void* values, int64_t capacity, int64_t* n);
/* The table's key and value dtypes. */
int fem_table_types(const char* key, int32_t* key_dtype, int32_t* value_dtype);

#ifdef __cplusplus
}
#endif

#endif
