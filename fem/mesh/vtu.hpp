// VTK XML unstructured grids (.vtu) and ParaView collections (.pvd): write a mesh with point and
// cell data so ParaView opens every result, and read back what write_vtu writes.
//
//   std::vector<double> u(mesh.num_nodes());
//   const fem::mesh::Field fields[] = {{"u", 1, u}};
//   fem::mesh::write_vtu("out/u.vtu", mesh, fields);
//   fem::mesh::PvdWriter series("out/heat.pvd");
//   series.write(t, mesh, fields);                      // heat_000000.vtu, in a private folder
//   series.commit();                                    // out/heat_000000.vtu ... and out/heat.pvd
//
// A parallel run writes one piece per rank and a .pvtu naming them (what ParaView opens), and
// lists the .pvtu files in the .pvd:
//
//   const auto pvtu = series.next_path(".pvtu");         // <private folder>/heat_000001.pvtu
//   write_vtu(pvtu_piece_path(pvtu, rank), local_mesh, fields);   // .../heat_000001_p<rank>.vtu
//   // rank 0, with every rank's piece path:
//   fem::mesh::write_pvtu(pvtu, pieces, fields, {});
//   series.add(t, pvtu);
//   series.commit();                                     // out/heat_000001.pvtu, its pieces, heat.pvd
//   const auto all = fem::mesh::read_pvtu("out/heat_000001.pvtu");   // every piece, concatenated
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "fem/atomic_file.hpp"
#include "fem/mesh.hpp"

namespace fem::mesh {

/// A named array of `components` numbers per point (or per cell): values.size() is
/// components × num_nodes (or num_cells), interleaved (x0 y0 z0 x1 y1 z1 ...).
struct Field {
  std::string name;
  int components = 1;
  std::span<const double> values;
};

/// How the arrays are stored: binary after the XML in one <AppendedData> block (smallest and
/// fastest), base64 inside each <DataArray>, or decimal text (exact: shortest round-trip form).
enum class VtuEncoding { appended_raw, base64, ascii };

struct VtuOptions {
  VtuEncoding encoding = VtuEncoding::appended_raw;
  /// zlib-compress the binary arrays (vtkZLibDataCompressor); ignored for ascii.
  bool compress = false;
  int compression_level = 6;  ///< zlib level 1 (fast) .. 9 (small)
  /// Write the cell tags as the Int32 cell array "tag".
  bool cell_tags = true;
};

/// VTK's node order of a cell type as indices into Gmsh's order: VTK node i is Gmsh node
/// order[i] (identity except tet10 and hex27). The VTK type number is cell_info(type).vtk_type.
std::span<const int> vtk_node_order(CellType type);

/// Write `mesh` as a VTK XML unstructured grid. Points are written with 3 coordinates (z = 0
/// below 3D), second-order cells as VTK's quadratic types (tri6 → 22, quad9 → 28, tet10 → 24,
/// hex27 → 29) with their nodes permuted. Throws InvalidArgument for a field of the wrong
/// size or a duplicate name, fem::Error naming the file when it cannot be written. All or
/// nothing (fem::AtomicFile): a failure leaves a previous file at that path intact.
void write_vtu(const std::filesystem::path& file, const Mesh& mesh, std::span<const Field> point_data = {},
               std::span<const Field> cell_data = {}, const VtuOptions& options = {});

/// One data array read from a .vtu file, converted to double.
struct VtuArray {
  std::string name;
  int components = 1;
  std::vector<double> values;
};

/// The content of a .vtu file, in VTK's terms.
struct VtuData {
  std::vector<double> points;              ///< num_points × 3
  std::vector<std::int64_t> connectivity;  ///< node indices, cells in VTK node order
  std::vector<std::int64_t> offsets;       ///< end of each cell in connectivity
  std::vector<std::uint8_t> types;         ///< VTK cell type of each cell
  std::vector<VtuArray> point_data, cell_data;
  std::string source;  ///< the file it was read from

  std::size_t num_points() const noexcept { return points.size() / 3; }
  std::size_t num_cells() const noexcept { return types.size(); }
  /// The point (cell) array of that name, or nullptr.
  const VtuArray* point_array(std::string_view name) const;
  const VtuArray* cell_array(std::string_view name) const;

  /// The grid as a fem::Mesh: all cells must have one VTK type this project supports; nodes go
  /// back to Gmsh order and the cell array "tag" becomes the cell tags. gdim 0 takes the
  /// smallest dimension ≥ the cells' that holds every nonzero coordinate. There are no tagged
  /// facets and no physical names (VTU has none).
  Mesh to_mesh(int gdim = 0) const;
};

/// Read a .vtu file as written by write_vtu: every VtuEncoding, compressed or not, UInt32 or
/// UInt64 headers, any VTK numeric type, either byte order. Throws fem::ParseError naming the
/// file and byte offset on anything else or on malformed content.
VtuData read_vtu(const std::filesystem::path& file);

/// Write a ParaView parallel unstructured grid (.pvtu) naming the pieces, each a .vtu written by
/// write_vtu with the same fields and options (a distributed run: one piece per rank, this file
/// from one rank). It declares what write_vtu writes in each piece, as ParaView requires: the
/// point arrays of `point_data_layout` and the cell arrays of `cell_data_layout` (Float64, their
/// names and components; their values are ignored and may be empty), the Int32 cell array "tag"
/// first when options.cell_tags, Float64 points, and the same header_type and compressor. Each
/// piece is a path as given to write_vtu (absolute, or relative to the current folder) and is
/// written relative to the .pvtu's folder; the pieces need not exist yet. Throws InvalidArgument
/// for no pieces, an empty piece path, a nameless field, components < 1 or a duplicate name
/// (as write_vtu would), fem::Error naming the file when it cannot be written. All or nothing
/// (fem::AtomicFile).
void write_pvtu(const std::filesystem::path& pvtu, std::span<const std::string> pieces,
                std::span<const Field> point_data_layout, std::span<const Field> cell_data_layout,
                const VtuOptions& options = {});

/// Where the piece `piece` (the rank) of `pvtu` goes by convention: <pvtu folder>/<pvtu
/// stem>_p<piece>.vtu, e.g. out/heat_000001_p3.vtu for out/heat_000001.pvtu.
std::filesystem::path pvtu_piece_path(const std::filesystem::path& pvtu, int piece);

/// Read a .pvtu and every piece it names (relative to its folder, or absolute) with read_vtu,
/// concatenated in piece order: points, cells (connectivity shifted by the points before
/// them), and the point and cell arrays the .pvtu declares, in its order (arrays a piece has
/// beyond those are dropped, as ParaView does). Nodes on the interface of two pieces appear
/// once in each piece, so num_points() counts them more than once; to_mesh() then gives a mesh
/// whose pieces are not connected. `source` is the .pvtu. Throws fem::ParseError naming the
/// .pvtu for malformed content, a piece that cannot be read (the piece named), or a piece
/// lacking a declared array or with other components (the piece and the array named);
/// read_vtu's ParseError naming the piece for malformed piece content.
VtuData read_pvtu(const std::filesystem::path& pvtu);

/// One step of a time series: its time and its .vtu (or .pvtu) file as written in the .pvd
/// (relative to the .pvd's folder).
struct PvdStep {
  double time = 0;
  std::string file;
};

/// A ParaView collection (.pvd) for time series, written as one output: all or nothing. The
/// frames go into a private folder next to the .pvd (fem::StagedFiles) and commit() moves them
/// beside it and writes the .pvd, together; a series given up before commit() (an error at some
/// step, an exception: the writer destroyed) removes its frames and leaves a previous series at
/// that path exactly as it was: its .pvd and its frames, which the new frames would replace.
/// Frames of a previous, longer series beyond the new one's are left where they are (the new
/// .pvd does not name them).
class PvdWriter {
 public:
  /// Starts an empty collection at `pvd`: checks that its folder exists and is writable (a
  /// fem::Error in words otherwise), writes nothing yet.
  explicit PvdWriter(std::filesystem::path pvd, VtuOptions options = {});
  /// Without commit(): the frames written since the last commit() are removed, nothing published.
  ~PvdWriter();
  PvdWriter(const PvdWriter&) = delete;
  PvdWriter& operator=(const PvdWriter&) = delete;

  /// Writes the frame <pvd stem>_<step, 6 digits>.vtu (at next_path()) and adds it at `time`;
  /// returns the path it has once committed, next to the .pvd.
  std::filesystem::path write(double time, const Mesh& mesh, std::span<const Field> point_data = {},
                              std::span<const Field> cell_data = {});
  /// Adds a frame written by other means, e.g. a .pvtu at next_path(".pvtu") and its pieces
  /// beside it (pvtu_piece_path). `file` is a path as given to the writer (absolute, or relative
  /// to the current folder); the .pvd lists it relative to its own folder: a file in the private
  /// folder as it will be once committed, next to the .pvd.
  void add(double time, const std::filesystem::path& file);

  /// Where the next frame goes until commit(), with this extension (".vtu", ".pvtu"): <private
  /// folder>/<pvd stem>_<steps().size(), 6 digits><extension>; the private folder is made on
  /// the first call after a commit(). InvalidArgument unless the extension starts with '.'.
  std::filesystem::path next_path(std::string_view extension = ".vtu") const;

  /// Publishes the series: every file in the private folder moved next to the .pvd, then the
  /// .pvd written listing every step, all or nothing (fem::StagedFiles::commit). A writer may go
  /// on after it: the next commit() publishes the frames written since, with the whole list.
  void commit();

  const std::vector<PvdStep>& steps() const noexcept { return steps_; }
  const std::filesystem::path& path() const noexcept { return pvd_; }

 private:
  std::filesystem::path pvd_;
  VtuOptions options_;
  std::vector<PvdStep> steps_;
  mutable std::unique_ptr<StagedFiles> frames_;  ///< the private folder, made when first needed
};

/// The steps listed in a .pvd file, in file order. Throws fem::ParseError on malformed content.
std::vector<PvdStep> read_pvd(const std::filesystem::path& pvd);

}  // namespace fem::mesh
