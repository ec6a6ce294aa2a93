/* What the C hosts of tests/capi share: FAIL (count and go on), OK (a call that must succeed:
 * its status and fem_last_error(), then exit), open_library (dlopen with RTLD_NOW | RTLD_LOCAL
 * or exit), and p_<name> pointers of a header's exact type looked up by DECLARE/LOAD. A host
 * declares p_fem_last_error (DECLARE(fem_last_error)) before it uses OK. */
#ifndef FEM_TESTS_CAPI_DLOPEN_CHECK_H
#define FEM_TESTS_CAPI_DLOPEN_CHECK_H

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;

#define FAIL(...)                                           \
  do {                                                      \
    fprintf(stderr, "%s:%d: FAILED: ", __FILE__, __LINE__); \
    fprintf(stderr, __VA_ARGS__);                           \
    fprintf(stderr, "\n");                                  \
    ++failures;                                             \
  } while (0)

#define OK(call)                                                                         \
  do {                                                                                   \
    int status_ = (call);                                                                \
    if (status_ != FEM_OK) {                                                             \
      fprintf(stderr, "%s:%d: %s returned %d: %s\n", __FILE__, __LINE__, #call, status_, \
              p_fem_last_error());                                                       \
      exit(1);                                                                           \
    }                                                                                    \
  } while (0)

static void* open_library(const char* path) {
  void* handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (handle == NULL) {
    fprintf(stderr, "dlopen(%s, RTLD_NOW | RTLD_LOCAL) failed: %s\n", path, dlerror());
    exit(1);
  }
  return handle;
}

static void* symbol(void* handle, const char* library, const char* name) {
  void* p;
  dlerror();
  p = dlsym(handle, name);
  if (p == NULL) {
    const char* why = dlerror();
    fprintf(stderr, "dlsym(%s, %s) failed: %s\n", library, name, why ? why : "NULL symbol");
    exit(1);
  }
  return p;
}

/* p_<name>: a pointer of the header's exact type, looked up in `handle`. */
#define DECLARE(name) static __typeof__(&name) p_##name
#define LOAD(handle, name)                     \
  do {                                         \
    void* s_ = symbol(handle, #handle, #name); \
    memcpy(&p_##name, &s_, sizeof s_);         \
  } while (0)

#endif
