// The VTK XML writers: unstructured grids (.vtu: appended raw, base64 or ascii; zlib),
// parallel records of pieces (.pvtu) and PVD collections. Reading them back: vtu_read.cpp.
#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <ostream>

#include "fem/atomic_file.hpp"
#include "fem/error.hpp"
#include "fem/mesh/detail/vtu_format.hpp"
#include "fem/mesh/vtu.hpp"

namespace fem::mesh {
namespace {

using detail::base64;
using detail::kFieldType;
using detail::kPointsType;
using detail::kTagName;
using detail::kTagType;

constexpr std::size_t kBlockSize = 1 << 16;

// ---------------------------------------------------------------------------------------------
// Node orders
constexpr int kIdentity[27] = {0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13,
                               14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26};
constexpr int kTet10[10] = {0, 1, 2, 3, 4, 5, 6, 7, 9, 8};
constexpr int kHex27[27] = {0,  1,  2,  3,  4,  5,  6,  7,  8,  11, 13, 9,  16, 18,
                            19, 17, 10, 12, 14, 15, 22, 23, 21, 24, 20, 25, 26};

// ---------------------------------------------------------------------------------------------
// Writing

std::string xml_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

struct OutArray {
  std::string name, type;  // VTK type name
  int components = 1;
  std::vector<unsigned char> bytes;  // little-endian values
  std::string ascii;                 // for ascii encoding
  std::vector<unsigned char> blob;   // header + (compressed) data for binary encodings
  std::string inline_text;           // base64 text
  std::uint64_t offset = 0;
};

template <class T>
std::vector<unsigned char> to_bytes(std::span<const T> v) {
  std::vector<unsigned char> b(v.size_bytes());
  if (!v.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

template <class T>
std::string to_ascii(std::span<const T> v) {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i) s += (i % 12 == 0) ? '\n' : ' ';
    if constexpr (sizeof(T) == 1)
      s += fmt::format("{}", static_cast<int>(v[i]));
    else
      s += fmt::format("{}", v[i]);
  }
  return s;
}

template <class T>
OutArray make_array(std::string name, std::string type, int components, std::span<const T> v, bool ascii) {
  OutArray a{std::move(name), std::move(type), components, {}, {}, {}, {}, 0};
  if (ascii)
    a.ascii = to_ascii(v);
  else
    a.bytes = to_bytes(v);
  return a;
}

void append_u64(std::vector<unsigned char>& b, std::uint64_t v) {
  const auto* p = reinterpret_cast<const unsigned char*>(&v);
  b.insert(b.end(), p, p + 8);
}

// Binary encodings: the header (UInt64 byte count, or the zlib block table) and the data.
void encode(OutArray& a, const VtuOptions& o, const std::string& file) {
  if (o.encoding == VtuEncoding::ascii) return;
  std::vector<unsigned char> header, data;
  if (!o.compress) {
    append_u64(header, a.bytes.size());
    data = std::move(a.bytes);
  } else {
    const std::size_t n = a.bytes.size(), nblocks = (n + kBlockSize - 1) / kBlockSize;
    append_u64(header, nblocks);
    append_u64(header, kBlockSize);
    append_u64(header, n % kBlockSize);
    for (std::size_t b = 0; b < nblocks; ++b) {
      const std::size_t len = std::min(kBlockSize, n - b * kBlockSize);
      uLongf clen = compressBound(static_cast<uLong>(len));
      const std::size_t at = data.size();
      data.resize(at + clen);
      const int rc = compress2(data.data() + at, &clen, a.bytes.data() + b * kBlockSize,
                               static_cast<uLong>(len), std::clamp(o.compression_level, 1, 9));
      if (rc != Z_OK) throw Error(fmt::format("cannot write '{}': zlib compression failed ({})", file, rc));
      data.resize(at + clen);
      append_u64(header, clen);
    }
    a.bytes.clear();
  }
  if (o.encoding == VtuEncoding::base64) {
    // Uncompressed: one base64 stream of header and data (what VTK writes); compressed: the
    // header and the blocks are separate streams.
    if (!o.compress) {
      header.insert(header.end(), data.begin(), data.end());
      a.inline_text = base64(header.data(), header.size());
    } else {
      a.inline_text = base64(header.data(), header.size()) + base64(data.data(), data.size());
    }
  } else {
    a.blob = std::move(header);
    a.blob.insert(a.blob.end(), data.begin(), data.end());
  }
}

void write_array_xml(std::ostream& out, const OutArray& a, const VtuOptions& o, const char* indent) {
  out << indent << "<DataArray type=\"" << a.type << "\" Name=\"" << xml_escape(a.name)
      << "\" NumberOfComponents=\"" << a.components << "\" format=\"";
  switch (o.encoding) {
    case VtuEncoding::appended_raw:
      out << "appended\" offset=\"" << a.offset << "\"/>\n";
      return;
    case VtuEncoding::base64:
      out << "binary\">\n" << indent << "  " << a.inline_text << '\n';
      break;
    case VtuEncoding::ascii:
      out << "ascii\">\n" << a.ascii << '\n';
      break;
  }
  out << indent << "</DataArray>\n";
}

// Names and components of the fields (`who` writes them): what write_vtu and write_pvtu declare.
void check_layout(std::span<const Field> fields, const char* what, const char* who, const VtuOptions& o) {
  for (std::size_t i = 0; i < fields.size(); ++i) {
    const Field& f = fields[i];
    FEM_EXPECTS(!f.name.empty(), "{}: {} field {} has no name", who, what, i);
    FEM_EXPECTS(f.components >= 1, "{}: {} field '{}' has {} components", who, what, f.name, f.components);
    for (std::size_t j = 0; j < i; ++j)
      FEM_EXPECTS(fields[j].name != f.name, "{}: two {} fields named '{}'", who, what, f.name);
    FEM_EXPECTS(!(o.cell_tags && std::string_view(what) == "cell" && f.name == kTagName),
                "{}: cell field '{}' clashes with the cell tags", who, kTagName);
  }
}

void check_fields(std::span<const Field> fields, std::size_t count, const char* what, const Mesh& mesh,
                  const VtuOptions& o) {
  check_layout(fields, what, "write_vtu", o);
  for (const Field& f : fields)
    FEM_EXPECTS(f.values.size() == count * static_cast<std::size_t>(f.components),
                "write_vtu: {} field '{}' has {} values, expected {} ({} {}s × {} components) on mesh '{}'",
                what, f.name, f.values.size(), count * f.components, count, what, f.components,
                mesh.source());
}

// The opening <VTKFile> tag (after the XML declaration) of a .vtu or .pvtu.
void write_vtkfile_tag(std::ostream& out, const char* type, const VtuOptions& o) {
  out << "<?xml version=\"1.0\"?>\n<VTKFile type=\"" << type
      << "\" version=\"1.0\" "
         "byte_order=\"LittleEndian\" "
         "header_type=\"UInt64\"";
  if (o.compress && o.encoding != VtuEncoding::ascii) out << " compressor=\"vtkZLibDataCompressor\"";
  out << ">\n";
}

// `file` (absolute, or relative to the current folder) relative to the folder of `anchor`, with
// '/' separators: how .pvd and .pvtu files name other files.
std::string relative_to_folder_of(const std::filesystem::path& file, const std::filesystem::path& anchor) {
  const auto abs = std::filesystem::absolute(file).lexically_normal();
  const auto base = std::filesystem::absolute(anchor).lexically_normal().parent_path();
  auto rel = abs.lexically_relative(base);
  if (rel.empty()) rel = abs;
  return rel.generic_string();
}

}  // namespace

std::span<const int> vtk_node_order(CellType type) {
  const auto n = static_cast<std::size_t>(cell_info(type).num_nodes);
  if (type == CellType::tet10) return kTet10;
  if (type == CellType::hex27) return kHex27;
  return {kIdentity, n};
}

void write_vtu(const std::filesystem::path& file, const Mesh& mesh, std::span<const Field> point_data,
               std::span<const Field> cell_data, const VtuOptions& o) {
  const auto nn = static_cast<std::size_t>(mesh.num_nodes()), nc = static_cast<std::size_t>(mesh.num_cells());
  check_fields(point_data, nn, "point", mesh, o);
  check_fields(cell_data, nc, "cell", mesh, o);
  const bool ascii = o.encoding == VtuEncoding::ascii;

  std::vector<OutArray> pd, cd, pts, cells;
  for (const auto& f : point_data)
    pd.push_back(make_array(f.name, kFieldType, f.components, f.values, ascii));
  // One tag per cell: a cell in several physical groups shows the first of them.
  std::vector<int> first_groups;
  std::span<const int> tags = mesh.cell_tags();
  if (o.cell_tags && !mesh.tag_sets().empty()) {
    first_groups.assign(tags.begin(), tags.end());
    for (int& t : first_groups)
      if (t < 0) t = mesh.groups(mesh.tdim(), t).front();
    tags = first_groups;
  }
  if (o.cell_tags) cd.push_back(make_array(kTagName, kTagType, 1, tags, ascii));
  for (const auto& f : cell_data) cd.push_back(make_array(f.name, kFieldType, f.components, f.values, ascii));

  std::vector<double> xyz(3 * nn, 0.0);
  const int gdim = mesh.gdim();
  for (std::size_t i = 0; i < nn; ++i)
    for (int d = 0; d < gdim; ++d) xyz[3 * i + d] = mesh.coords()[i * gdim + d];
  pts.push_back(make_array<double>("Points", kPointsType, 3, xyz, ascii));
  xyz = {};

  const int npc = mesh.nodes_per_cell();
  const auto order = vtk_node_order(mesh.cell_type());
  std::vector<index_t> conn(nc * npc), offsets(nc);
  for (std::size_t c = 0; c < nc; ++c) {
    const auto v = mesh.cell(static_cast<index_t>(c));
    for (int k = 0; k < npc; ++k) conn[c * npc + k] = v[order[k]];
    offsets[c] = static_cast<index_t>((c + 1) * npc);
  }
  std::vector<std::uint8_t> types(nc, static_cast<std::uint8_t>(mesh.cell_info().vtk_type));
  cells.push_back(make_array<index_t>("connectivity", "Int32", 1, conn, ascii));
  conn = {};
  cells.push_back(make_array<index_t>("offsets", "Int32", 1, offsets, ascii));
  cells.push_back(make_array<std::uint8_t>("types", "UInt8", 1, types, ascii));

  std::uint64_t offset = 0;
  for (auto* group : {&pd, &cd, &pts, &cells})
    for (auto& a : *group) {
      encode(a, o, file.string());
      a.offset = offset;
      offset += a.blob.size();
    }

  AtomicFile atomic(file);  // all or nothing: a failure leaves the previous file as it was
  std::ostream& out = atomic.stream();
  write_vtkfile_tag(out, "UnstructuredGrid", o);
  out << "  <UnstructuredGrid>\n    <Piece NumberOfPoints=\"" << nn << "\" NumberOfCells=\"" << nc << "\">\n";
  const char* ind = "        ";
  if (!pd.empty()) {
    out << "      <PointData>\n";
    for (const auto& a : pd) write_array_xml(out, a, o, ind);
    out << "      </PointData>\n";
  }
  if (!cd.empty()) {
    out << "      <CellData>\n";
    for (const auto& a : cd) write_array_xml(out, a, o, ind);
    out << "      </CellData>\n";
  }
  out << "      <Points>\n";
  write_array_xml(out, pts[0], o, ind);
  out << "      </Points>\n      <Cells>\n";
  for (const auto& a : cells) write_array_xml(out, a, o, ind);
  out << "      </Cells>\n    </Piece>\n  </UnstructuredGrid>\n";
  if (o.encoding == VtuEncoding::appended_raw) {
    out << "  <AppendedData encoding=\"raw\">\n   _";
    for (auto* group : {&pd, &cd, &pts, &cells})
      for (const auto& a : *group)
        out.write(reinterpret_cast<const char*>(a.blob.data()), static_cast<std::streamsize>(a.blob.size()));
    out << "\n  </AppendedData>\n";
  }
  out << "</VTKFile>\n";
  atomic.commit();
}

// ---------------------------------------------------------------------------------------------
// PVTU

void write_pvtu(const std::filesystem::path& pvtu, std::span<const std::string> pieces,
                std::span<const Field> point_data_layout, std::span<const Field> cell_data_layout,
                const VtuOptions& o) {
  check_layout(point_data_layout, "point", "write_pvtu", o);
  check_layout(cell_data_layout, "cell", "write_pvtu", o);
  FEM_EXPECTS(!pieces.empty(), "write_pvtu: '{}' needs at least one piece", pvtu.string());
  for (std::size_t i = 0; i < pieces.size(); ++i)
    FEM_EXPECTS(!pieces[i].empty(), "write_pvtu: piece {} of '{}' has an empty path", i, pvtu.string());

  const auto declare = [](std::ostream& out, std::string_view name, const char* type, int components) {
    out << "      <PDataArray type=\"" << type << "\" Name=\"" << xml_escape(name)
        << "\" NumberOfComponents=\"" << components << "\"/>\n";
  };
  AtomicFile atomic(pvtu);  // all or nothing: a failure leaves the previous file as it was
  std::ostream& out = atomic.stream();
  write_vtkfile_tag(out, "PUnstructuredGrid", o);
  out << "  <PUnstructuredGrid GhostLevel=\"0\">\n";
  if (!point_data_layout.empty()) {
    out << "    <PPointData>\n";
    for (const auto& f : point_data_layout) declare(out, f.name, kFieldType, f.components);
    out << "    </PPointData>\n";
  }
  if (o.cell_tags || !cell_data_layout.empty()) {
    out << "    <PCellData>\n";
    if (o.cell_tags) declare(out, kTagName, kTagType, 1);
    for (const auto& f : cell_data_layout) declare(out, f.name, kFieldType, f.components);
    out << "    </PCellData>\n";
  }
  out << "    <PPoints>\n";
  declare(out, "Points", kPointsType, 3);
  out << "    </PPoints>\n";
  for (const auto& piece : pieces)
    out << "    <Piece Source=\"" << xml_escape(relative_to_folder_of(piece, pvtu)) << "\"/>\n";
  out << "  </PUnstructuredGrid>\n</VTKFile>\n";
  atomic.commit();
}

std::filesystem::path pvtu_piece_path(const std::filesystem::path& pvtu, int piece) {
  FEM_EXPECTS(piece >= 0, "pvtu_piece_path: piece {} of '{}' is negative", piece, pvtu.string());
  return pvtu.parent_path() / fmt::format("{}_p{}.vtu", pvtu.stem().string(), piece);
}

// ---------------------------------------------------------------------------------------------
// PVD

PvdWriter::PvdWriter(std::filesystem::path pvd, VtuOptions options)
    : pvd_(std::move(pvd)), options_(options) {
  check_writable(pvd_);  // fail now, before the simulation, but leave a previous series alone
}

PvdWriter::~PvdWriter() = default;  // frames_ removes what was not committed

std::filesystem::path PvdWriter::next_path(std::string_view extension) const {
  FEM_EXPECTS(!extension.empty() && extension.front() == '.',
              "PvdWriter::next_path: extension '{}' does not start with '.'", extension);
  if (!frames_) frames_ = std::make_unique<StagedFiles>(pvd_.parent_path(), pvd_.filename().string());
  return frames_->path() / fmt::format("{}_{:06d}{}", pvd_.stem().string(), steps_.size(), extension);
}

std::filesystem::path PvdWriter::write(double time, const Mesh& mesh, std::span<const Field> point_data,
                                       std::span<const Field> cell_data) {
  const std::filesystem::path file = next_path(".vtu");
  write_vtu(file, mesh, point_data, cell_data, options_);
  steps_.push_back({time, file.filename().string()});
  return pvd_.parent_path() / file.filename();
}

void PvdWriter::add(double time, const std::filesystem::path& file) {
  FEM_EXPECTS(!file.empty(), "PvdWriter::add: empty path for the step at time {} of '{}'", time,
              pvd_.string());
  // A file in the private folder is listed where commit() puts it: beside the .pvd.
  if (frames_) {
    const auto abs = std::filesystem::absolute(file).lexically_normal();
    const auto rel = abs.lexically_relative(std::filesystem::absolute(frames_->path()).lexically_normal());
    if (!rel.empty() && *rel.begin() != "..") {
      steps_.push_back({time, relative_to_folder_of(pvd_.parent_path() / rel, pvd_)});
      return;
    }
  }
  steps_.push_back({time, relative_to_folder_of(file, pvd_)});
}

void PvdWriter::commit() {
  AtomicFile atomic(pvd_);
  std::ostream& out = atomic.stream();
  out << "<?xml version=\"1.0\"?>\n<VTKFile type=\"Collection\" version=\"0.1\" "
         "byte_order=\"LittleEndian\">\n"
         "  <Collection>\n";
  for (const auto& s : steps_)
    out << fmt::format("    <DataSet timestep=\"{}\" group=\"\" part=\"0\" file=\"{}\"/>\n", s.time,
                       xml_escape(s.file));
  out << "  </Collection>\n</VTKFile>\n";
  if (!frames_) return atomic.commit();
  const auto frames = std::move(frames_);  // gone after this, committed or not
  frames->commit(&atomic);
}

}  // namespace fem::mesh
