// libFuzzer target for the mesh readers: any input must either give a Mesh or a fem::ParseError;
// anything else (a crash, another exception, a leak, a huge allocation) is a bug.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fem/error.hpp"
#include "fem/mesh/read.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    const fem::Mesh m = fem::mesh::read_gmsh(bytes, "fuzz.msh");
    (void)m.num_cells();
  } catch (const fem::ParseError&) {
  }
  try {
    const fem::Mesh m = fem::mesh::read_medit(bytes, "fuzz.mesh");
    (void)m.num_cells();
  } catch (const fem::ParseError&) {
  }
  return 0;
}
