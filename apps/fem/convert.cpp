// fem convert: write a mesh in another format, chosen by the output's extension.
//   fem convert meshes/square.msh square.vtu
//   fem convert gen:cube-hex8:16 cube.vtu --encoding base64 --compress
//   fem convert bracket.mesh bracket.msh --reorient
#include <fmt/core.h>

#include <memory>

#include "commands.hpp"
#include "fem/atomic_file.hpp"
#include "fem/error.hpp"
#include "fem/mesh/check.hpp"
#include "fem/mesh/vtu.hpp"
#include "fem/mesh/write_gmsh.hpp"
#include "load_mesh.hpp"

namespace fem::app {
namespace {

struct ConvertArgs {
  std::string in, out, encoding = "raw";
  bool compress = false, reorient = false, binary = false;
};

void run_convert(const ConvertArgs& a) {
  const std::filesystem::path out(a.out);
  const std::string ext = out.extension().string();
  if (ext != ".vtu" && ext != ".msh")
    throw InvalidArgument(
        fmt::format("cannot write '{}': unknown extension '{}' (use .vtu or .msh)", a.out, ext));
  check_writable(out);  // before reading the mesh
  Mesh m = load_mesh(a.in);
  if (a.reorient) {
    const auto report = mesh::check(m);
    if (!report.inverted.empty()) {
      m = mesh::reorient(m);
      fmt::print(stderr, "fem convert: reoriented {} inverted cells\n", report.inverted.size());
    }
    if (!report.tangled.empty() || !report.degenerate.empty())
      fmt::print(stderr,
                 "fem convert: {} tangled and {} degenerate cells remain (no reordering fixes them)\n",
                 report.tangled.size(), report.degenerate.size());
  }
  if (ext == ".vtu") {
    mesh::VtuOptions o;
    o.encoding = a.encoding == "base64"  ? mesh::VtuEncoding::base64
                 : a.encoding == "ascii" ? mesh::VtuEncoding::ascii
                                         : mesh::VtuEncoding::appended_raw;
    o.compress = a.compress;
    mesh::write_vtu(out, m, {}, {}, o);
    return;
  }
  mesh::write_gmsh(m, out, a.binary);
}

}  // namespace

void add_convert(CLI::App& app) {
  auto* cmd = app.add_subcommand("convert", "write a mesh as .vtu (VTK XML) or .msh (Gmsh 4.1)");
  auto a = std::make_shared<ConvertArgs>();
  cmd->add_option("in", a->in, "mesh file, or gen:square-tri3:N, gen:cube-tet4:N, ...")->required();
  cmd->add_option("out", a->out, "output file; the format comes from the extension")->required();
  cmd->add_option("--encoding", a->encoding, "VTU data encoding")
      ->check(CLI::IsMember({"raw", "base64", "ascii"}))
      ->capture_default_str();
  cmd->add_flag("--compress", a->compress, "zlib-compress the VTU arrays");
  cmd->add_flag("--binary", a->binary, "binary .msh");
  cmd->add_flag("--reorient", a->reorient, "fix inverted cells before writing");
  cmd->callback([a] { run_convert(*a); });
}

}  // namespace fem::app
