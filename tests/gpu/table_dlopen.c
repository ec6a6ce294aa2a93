/* The hash table op from C, as a host language would use it (issue 30): this program links no
 * fem library. It dlopen()s libfem_gpu alone with RTLD_NOW | RTLD_LOCAL, finds every op with
 * dlsym, and checks them against a plain C reference on random batches with repeated and missing
 * keys: insert_unique numbers in first-occurrence order, find, size, export sorted, insert
 * assigns, and an error (the reserved key) leaves the table as it was.
 * FEM_GPU_LIBRARY: a compile definition. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fem/gpu/c_api.h"

static int failures = 0;
#define CHECK(cond, ...)                                                 \
  do {                                                                   \
    if (!(cond)) {                                                       \
      fprintf(stderr, "%s:%d: FAILED: %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                      \
      fprintf(stderr, "\n");                                             \
      ++failures;                                                        \
    }                                                                    \
  } while (0)

#define N 4000
#define UNIVERSE 1000

/* p_<name>: a pointer of the header's exact type, looked up in the library. */
#define DECLARE(name) static __typeof__(&name) p_##name
#define LOAD(name)                     \
  do {                                 \
    void* s_ = symbol(lib, #name);     \
    memcpy(&p_##name, &s_, sizeof s_); \
  } while (0)
DECLARE(fem_table_create);
DECLARE(fem_table_insert);
DECLARE(fem_table_insert_unique);
DECLARE(fem_table_find);
DECLARE(fem_table_size);
DECLARE(fem_table_export);
DECLARE(fem_last_error);
#define create p_fem_table_create
#define insert p_fem_table_insert
#define insert_unique p_fem_table_insert_unique
#define find p_fem_table_find
#define size p_fem_table_size
#define export_entries p_fem_table_export
#define last_error p_fem_last_error

static void* symbol(void* lib, const char* name) {
  void* f = dlsym(lib, name);
  if (!f) {
    fprintf(stderr, "dlsym %s: %s\n", name, dlerror());
    exit(1);
  }
  return f;
}

int main(void) {
  void* lib = dlopen(FEM_GPU_LIBRARY, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "dlopen %s: %s\n", FEM_GPU_LIBRARY, dlerror());
    return 1;
  }
  LOAD(fem_table_create);
  LOAD(fem_table_insert);
  LOAD(fem_table_insert_unique);
  LOAD(fem_table_find);
  LOAD(fem_table_size);
  LOAD(fem_table_export);
  LOAD(fem_last_error); /* libfem_shared's, a dependency: dlsym on the handle finds it */

  static int64_t keys[N], ids[N], reference[UNIVERSE], values[N], out[N];
  static uint8_t is_new[N], found[N];
  int64_t next = 0, n = 0, i;
  for (i = 0; i < UNIVERSE; ++i) reference[i] = -1;
  srand(5);
  for (i = 0; i < N; ++i) keys[i] = rand() % UNIVERSE; /* many repeats */

  CHECK(create("c/ids", FEM_I64, FEM_I64, 16, 0.5, FEM_DEVICE_DEBUG) == FEM_OK, "%s", last_error());
  CHECK(insert_unique("c/ids", keys, ids, is_new, N) == FEM_OK, "%s", last_error());
  for (i = 0; i < N; ++i) {
    const int fresh = reference[keys[i]] < 0;
    if (fresh) reference[keys[i]] = next++;
    CHECK(ids[i] == reference[keys[i]] && is_new[i] == fresh, "key %lld: id %lld, expected %lld",
          (long long)keys[i], (long long)ids[i], (long long)reference[keys[i]]);
  }
  CHECK(size("c/ids", &n) == FEM_OK && n == next, "size %lld, %lld distinct keys", (long long)n,
        (long long)next);

  /* find: present and missing keys (those >= UNIVERSE) */
  for (i = 0; i < N; ++i) keys[i] = rand() % (2 * UNIVERSE);
  CHECK(find("c/ids", keys, out, found, N) == FEM_OK, "%s", last_error());
  for (i = 0; i < N; ++i) {
    const int present = keys[i] < UNIVERSE && reference[keys[i]] >= 0;
    CHECK(found[i] == present, "key %lld", (long long)keys[i]);
    if (present) CHECK(out[i] == reference[keys[i]], "key %lld", (long long)keys[i]);
  }

  /* export: sorted by key, every entry */
  CHECK(export_entries("c/ids", keys, values, N, &n) == FEM_OK && n == next, "%s", last_error());
  for (i = 1; i < n; ++i) CHECK(keys[i - 1] < keys[i], "export order at %lld", (long long)i);
  for (i = 0; i < n; ++i) CHECK(values[i] == reference[keys[i]], "export value of %lld", (long long)keys[i]);

  /* insert assigns; the reserved key fails the whole batch */
  keys[0] = 7, keys[1] = -1;
  values[0] = 70, values[1] = 10;
  CHECK(insert("c/ids", keys, values, 2) == FEM_ERR_INVALID_ARGUMENT, "the reserved key accepted");
  CHECK(find("c/ids", keys, out, found, 1) == FEM_OK && (!found[0] || out[0] == reference[7]),
        "changed by a failed insert");
  CHECK(insert("c/ids", keys, values, 1) == FEM_OK && find("c/ids", keys, out, found, 1) == FEM_OK &&
            out[0] == 70,
        "insert did not assign");

  if (failures) return 1;
  printf("table ops from C through dlopen: %lld distinct keys of %d, every op as the reference\n",
         (long long)next, N);
  return 0;
}
