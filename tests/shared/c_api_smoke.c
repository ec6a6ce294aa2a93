/* Compiled as C: proves fem/c_api.h is a C header and the ABI works without C++. */
#include <stdio.h>
#include <string.h>

#include "fem/c_api.h"

#define CHECK(cond)                                                                                   \
  do {                                                                                                \
    if (!(cond)) {                                                                                    \
      fprintf(stderr, "%s:%d: check failed: %s (%s)\n", __FILE__, __LINE__, #cond, fem_last_error()); \
      return 1;                                                                                       \
    }                                                                                                 \
  } while (0)

int main(void) {
  double rhs[4] = {1.0, 2.0, 3.0, 4.0};
  int64_t shape[1] = {4};
  double out[4] = {0};
  uint64_t version = 0;
  fem_entry_info info;
  CHECK(fem_put_f64("c/rhs", rhs, 1, shape, &version) == FEM_OK);
  CHECK(version > 0);
  CHECK(fem_get_f64("c/rhs", out, 4) == FEM_OK);
  CHECK(out[3] == 4.0);
  CHECK(fem_info("c/rhs", &info) == FEM_OK && info.shape[0] == 4 && info.dtype == FEM_F64);
  CHECK(fem_get_f64("c/none", out, 4) == FEM_ERR_NOT_FOUND);
  CHECK(strstr(fem_last_error(), "c/none") != NULL);
  CHECK(fem_erase("c/rhs") == FEM_OK);
  printf("C ABI version %d: ok\n", fem_abi_version());
  return 0;
}
