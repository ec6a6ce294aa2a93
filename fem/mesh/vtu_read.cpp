// The VTK XML readers: unstructured grids (.vtu) as write_vtu and VTK write them (every
// encoding, zlib, either byte order, UInt32 or UInt64 headers), parallel records of pieces
// (.pvtu) and PVD collections. Writing them: vtu_write.cpp.
#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "fem/error.hpp"
#include "fem/mesh/detail/vtu_format.hpp"
#include "fem/mesh/vtu.hpp"

namespace fem::mesh {
namespace {

using detail::kTagName;
using detail::unbase64;

// ---------------------------------------------------------------------------------------------
// Reading: a small scanner for the XML that write_vtu (and VTK) writes.

struct Tag {
  std::string name;
  std::map<std::string, std::string, std::less<>> attrs;
  bool closing = false, self_closing = false;
  std::size_t begin = 0, end = 0;  // '<' and one past '>'
};

class Reader {
 public:
  Reader(std::string text, std::string file) : s_(std::move(text)), file_(std::move(file)) {}

  [[noreturn]] void fail(std::size_t at, const std::string& msg) const {
    throw ParseError(file_, ParseError::Position::byte, at, msg);
  }

  // Next tag at or after pos (skipping <?...?> and comments); false at the end.
  bool next_tag(std::size_t& pos, Tag& t) const {
    while (true) {
      const std::size_t lt = s_.find('<', pos);
      if (lt == std::string::npos || lt >= limit_) return false;
      if (s_.compare(lt, 4, "<!--") == 0) {
        const std::size_t e = s_.find("-->", lt);
        if (e == std::string::npos) fail(lt, "unterminated comment");
        pos = e + 3;
        continue;
      }
      if (s_.compare(lt, 2, "<?") == 0) {
        const std::size_t e = s_.find("?>", lt);
        if (e == std::string::npos) fail(lt, "unterminated declaration");
        pos = e + 2;
        continue;
      }
      t = Tag{};
      t.begin = lt;
      std::size_t i = lt + 1;
      if (i < s_.size() && s_[i] == '/') t.closing = true, ++i;
      const std::size_t n0 = i;
      while (i < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[i])) || s_[i] == '_')) ++i;
      t.name = s_.substr(n0, i - n0);
      if (t.name.empty()) fail(lt, "malformed XML tag");
      while (true) {
        while (i < s_.size() && std::isspace(static_cast<unsigned char>(s_[i]))) ++i;
        if (i >= s_.size()) fail(lt, fmt::format("unterminated <{}> tag", t.name));
        if (s_[i] == '>') {
          t.end = i + 1;
          break;
        }
        if (s_[i] == '/' && i + 1 < s_.size() && s_[i + 1] == '>') {
          t.self_closing = true;
          t.end = i + 2;
          break;
        }
        const std::size_t a0 = i;
        while (i < s_.size() && s_[i] != '=' && !std::isspace(static_cast<unsigned char>(s_[i])) &&
               s_[i] != '>')
          ++i;
        std::string key = s_.substr(a0, i - a0);
        while (i < s_.size() && std::isspace(static_cast<unsigned char>(s_[i]))) ++i;
        if (i >= s_.size() || s_[i] != '=')
          fail(a0, fmt::format("attribute '{}' of <{}> has no value", key, t.name));
        ++i;
        while (i < s_.size() && std::isspace(static_cast<unsigned char>(s_[i]))) ++i;
        if (i >= s_.size() || (s_[i] != '"' && s_[i] != '\'')) fail(i, "attribute value not quoted");
        const char q = s_[i];
        const std::size_t v0 = ++i;
        const std::size_t v1 = s_.find(q, v0);
        if (v1 == std::string::npos) fail(v0, "unterminated attribute value");
        t.attrs[key] = unescape(s_.substr(v0, v1 - v0));
        i = v1 + 1;
      }
      pos = t.end;
      return true;
    }
  }

  static std::string unescape(const std::string& v) {
    std::string out;
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (v[i] != '&') {
        out += v[i];
        continue;
      }
      const std::size_t e = v.find(';', i);
      const std::string ent = e == std::string::npos ? "" : v.substr(i + 1, e - i - 1);
      const char c = ent == "amp"    ? '&'
                     : ent == "lt"   ? '<'
                     : ent == "gt"   ? '>'
                     : ent == "quot" ? '"'
                     : ent == "apos" ? '\''
                                     : 0;
      if (!c) {
        out += v[i];
        continue;
      }
      out += c;
      i = e;
    }
    return out;
  }

  std::string s_, file_;
  std::size_t limit_ = std::string::npos;
};

struct InArray {
  std::string name, type, format;
  int components = 1;
  std::uint64_t offset = 0;
  std::string_view text;
  std::size_t at = 0;  // byte position in the file
};

std::size_t type_size(std::string_view t) {
  if (t == "Int8" || t == "UInt8") return 1;
  if (t == "Int16" || t == "UInt16") return 2;
  if (t == "Int32" || t == "UInt32" || t == "Float32") return 4;
  if (t == "Int64" || t == "UInt64" || t == "Float64") return 8;
  return 0;
}

template <class T>
T load(const unsigned char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

double value_at(std::string_view type, const unsigned char* p) {
  if (type == "Float64") return load<double>(p);
  if (type == "Float32") return load<float>(p);
  if (type == "Int8") return load<std::int8_t>(p);
  if (type == "UInt8") return load<std::uint8_t>(p);
  if (type == "Int16") return load<std::int16_t>(p);
  if (type == "UInt16") return load<std::uint16_t>(p);
  if (type == "Int32") return load<std::int32_t>(p);
  if (type == "UInt32") return load<std::uint32_t>(p);
  if (type == "Int64") return static_cast<double>(load<std::int64_t>(p));
  return static_cast<double>(load<std::uint64_t>(p));
}

std::int64_t int_at(std::string_view type, const unsigned char* p) {
  if (type == "Int64") return load<std::int64_t>(p);
  if (type == "UInt64") return static_cast<std::int64_t>(load<std::uint64_t>(p));
  return static_cast<std::int64_t>(value_at(type, p));
}

struct FileInfo {
  bool big_endian = false;
  std::size_t header_size = 4;
  bool compressed = false;
  std::string_view appended;  // the raw appended bytes after '_'
  std::size_t appended_at = 0;
};

// The values of an array as little-endian bytes of its type, or (ascii) the parsed numbers.
class Decoder {
 public:
  Decoder(const Reader& r, const FileInfo& f) : r_(r), f_(f) {}

  std::uint64_t header_value(const unsigned char* p) const {
    std::uint64_t v = 0;
    const std::size_t n = f_.header_size;
    for (std::size_t k = 0; k < n; ++k) v |= std::uint64_t{p[f_.big_endian ? n - 1 - k : k]} << (8 * k);
    return v;
  }

  // Header + data in `b` starting at 0; returns the decoded bytes and the bytes consumed.
  std::vector<unsigned char> binary(const InArray& a, const unsigned char* b, std::size_t avail,
                                    std::size_t at) const {
    const std::size_t hs = f_.header_size;
    if (avail < hs) r_.fail(at, fmt::format("data of array '{}' is truncated", a.name));
    std::vector<unsigned char> out;
    if (!f_.compressed) {
      const std::uint64_t n = header_value(b);
      if (n > avail - hs)
        r_.fail(at, fmt::format("array '{}' claims {} bytes, {} present", a.name, n, avail - hs));
      out.assign(b + hs, b + hs + n);
    } else {
      const std::uint64_t nb = header_value(b);
      if (avail < hs * 3 || nb > (avail - 3 * hs) / hs)
        r_.fail(at, fmt::format("compression header of array '{}' is truncated", a.name));
      const std::uint64_t bs = header_value(b + hs), last = header_value(b + 2 * hs);
      std::size_t pos = hs * (3 + nb);
      for (std::uint64_t k = 0; k < nb; ++k) {
        const std::uint64_t clen = header_value(b + hs * (3 + k));
        const std::uint64_t ulen = (k + 1 == nb && last) ? last : bs;
        if (clen > avail - pos)
          r_.fail(at, fmt::format("compressed block {} of array '{}' is truncated", k, a.name));
        const std::size_t o = out.size();
        out.resize(o + ulen);
        uLongf got = static_cast<uLongf>(ulen);
        const int rc = uncompress(out.data() + o, &got, b + pos, static_cast<uLong>(clen));
        if (rc != Z_OK || got != ulen)
          r_.fail(at, fmt::format("zlib block {} of array '{}' is corrupt", k, a.name));
        pos += clen;
      }
    }
    return out;
  }

  std::vector<unsigned char> bytes(const InArray& a) const {
    std::vector<unsigned char> raw;
    if (a.format == "appended") {
      if (a.offset > f_.appended.size())
        r_.fail(a.at, fmt::format("offset {} of array '{}' is past the appended data", a.offset, a.name));
      const auto* p = reinterpret_cast<const unsigned char*>(f_.appended.data()) + a.offset;
      raw = binary(a, p, f_.appended.size() - a.offset, f_.appended_at + a.offset);
    } else if (a.format == "binary") {
      std::vector<unsigned char> dec;
      if (!f_.compressed) {
        if (!unbase64(a.text, dec)) r_.fail(a.at, fmt::format("bad base64 in array '{}'", a.name));
        // The header may have been encoded as its own stream (padding after it): the group
        // sizes from unbase64 already concatenate the streams, so nothing else to do.
        raw = binary(a, dec.data(), dec.size(), a.at);
      } else {
        if (!unbase64(a.text, dec)) r_.fail(a.at, fmt::format("bad base64 in array '{}'", a.name));
        raw = binary(a, dec.data(), dec.size(), a.at);
      }
    } else {
      r_.fail(a.at, fmt::format("array '{}' has unsupported format '{}'", a.name, a.format));
    }
    const std::size_t ts = type_size(a.type);
    if (raw.size() % ts)
      r_.fail(a.at, fmt::format("array '{}' has {} bytes, not a multiple of {}", a.name, raw.size(), ts));
    if (f_.big_endian)
      for (std::size_t i = 0; i < raw.size(); i += ts) std::reverse(raw.begin() + i, raw.begin() + i + ts);
    return raw;
  }

  template <class T, class Convert>
  std::vector<T> values(const InArray& a, Convert convert) const {
    const std::size_t ts = type_size(a.type);
    if (!ts) r_.fail(a.at, fmt::format("array '{}' has unsupported type '{}'", a.name, a.type));
    std::vector<T> out;
    if (a.format == "ascii") {
      const char* p = a.text.data();
      const char* end = p + a.text.size();
      while (true) {
        while (p < end && std::isspace(static_cast<unsigned char>(*p))) ++p;
        if (p == end) break;
        double v = 0;
        auto [q, ec] = std::from_chars(p, end, v);
        if (ec != std::errc())
          r_.fail(a.at + (p - a.text.data()), fmt::format("bad number in ascii array '{}'", a.name));
        if constexpr (std::is_integral_v<T>) {
          std::int64_t iv = 0;
          auto [q2, ec2] = std::from_chars(p, end, iv);
          out.push_back(ec2 == std::errc() && q2 == q ? iv : static_cast<T>(v));
        } else {
          out.push_back(v);
        }
        p = q;
      }
      return out;
    }
    const auto raw = bytes(a);
    out.resize(raw.size() / ts);
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = convert(a.type, raw.data() + i * ts);
    return out;
  }

 private:
  const Reader& r_;
  const FileInfo& f_;
};

std::string read_file(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw Error(fmt::format("cannot open '{}': {}", file.string(), std::strerror(errno)));
  std::ostringstream ss;
  ss << in.rdbuf();
  return std::move(ss).str();
}

std::optional<CellType> cell_type_from_vtk(int vtk) {
  for (int k = 0; k <= static_cast<int>(CellType::hex27); ++k)
    if (cell_info(static_cast<CellType>(k)).vtk_type == vtk) return static_cast<CellType>(k);
  return std::nullopt;
}

}  // namespace

const VtuArray* VtuData::point_array(std::string_view name) const {
  for (const auto& a : point_data)
    if (a.name == name) return &a;
  return nullptr;
}

const VtuArray* VtuData::cell_array(std::string_view name) const {
  for (const auto& a : cell_data)
    if (a.name == name) return &a;
  return nullptr;
}

VtuData read_vtu(const std::filesystem::path& path) {
  const std::string fname = path.string();
  Reader r(read_file(path), fname);
  FileInfo fi;
  // Everything after '_' in <AppendedData> is binary: scan tags only before it.
  const std::size_t app = r.s_.find("<AppendedData");
  if (app != std::string::npos) {
    r.limit_ = app;
    Tag t;
    std::size_t p = app;
    std::size_t saved = r.limit_;
    r.limit_ = std::string::npos;
    r.next_tag(p, t);
    r.limit_ = saved;
    const auto enc = t.attrs.find("encoding");
    if (enc != t.attrs.end() && enc->second != "raw")
      r.fail(app, fmt::format("appended data encoding '{}' is not supported (only raw)", enc->second));
    const std::size_t us = r.s_.find('_', t.end);
    if (us == std::string::npos) r.fail(t.end, "appended data has no '_' marker");
    fi.appended_at = us + 1;
    fi.appended = std::string_view(r.s_).substr(us + 1);
  }

  VtuData d;
  d.source = fname;
  std::size_t pos = 0;
  Tag t;
  bool seen_file = false, seen_piece = false;
  std::string section;
  std::size_t npoints = 0, ncells = 0;
  std::vector<InArray> arrays;
  std::vector<std::string> sections;
  while (r.next_tag(pos, t)) {
    if (t.name == "VTKFile" && !t.closing) {
      seen_file = true;
      auto get = [&](const char* k) {
        auto it = t.attrs.find(k);
        return it == t.attrs.end() ? std::string() : it->second;
      };
      if (get("type") != "UnstructuredGrid")
        r.fail(t.begin, fmt::format("VTK file type '{}' is not UnstructuredGrid", get("type")));
      fi.big_endian = get("byte_order") == "BigEndian";
      const std::string ht = get("header_type");
      if (ht == "UInt64")
        fi.header_size = 8;
      else if (ht.empty() || ht == "UInt32")
        fi.header_size = 4;
      else
        r.fail(t.begin, fmt::format("header_type '{}' is not supported", ht));
      const std::string comp = get("compressor");
      if (!comp.empty() && comp != "vtkZLibDataCompressor")
        r.fail(t.begin, fmt::format("compressor '{}' is not supported", comp));
      fi.compressed = !comp.empty();
    } else if (t.name == "Piece" && !t.closing) {
      if (seen_piece) r.fail(t.begin, "more than one <Piece> is not supported");
      seen_piece = true;
      try {
        npoints = std::stoull(t.attrs.at("NumberOfPoints"));
        ncells = std::stoull(t.attrs.at("NumberOfCells"));
      } catch (const std::exception&) {
        r.fail(t.begin, "<Piece> without valid NumberOfPoints and NumberOfCells");
      }
    } else if (t.name == "PointData" || t.name == "CellData" || t.name == "Points" || t.name == "Cells" ||
               t.name == "FieldData") {
      section = (t.closing || t.self_closing) ? "" : t.name;
    } else if (t.name == "DataArray" && !t.closing) {
      InArray a;
      a.at = t.begin;
      auto get = [&](const char* k, const char* def) {
        auto it = t.attrs.find(k);
        return it == t.attrs.end() ? std::string(def) : it->second;
      };
      a.name = get("Name", "");
      a.type = get("type", "");
      a.format = get("format", "ascii");
      try {
        a.components = std::stoi(get("NumberOfComponents", "1"));
        a.offset = std::stoull(get("offset", "0"));
      } catch (const std::exception&) {
        r.fail(t.begin, fmt::format("bad NumberOfComponents or offset in array '{}'", a.name));
      }
      if (a.components < 1)
        r.fail(t.begin, fmt::format("array '{}' has {} components", a.name, a.components));
      if (!type_size(a.type))
        r.fail(t.begin, fmt::format("array '{}' has unsupported type '{}'", a.name, a.type));
      if (!t.self_closing) {
        const std::size_t e = r.s_.find("</DataArray>", t.end);
        if (e == std::string::npos || e > r.limit_)
          r.fail(t.begin, fmt::format("array '{}' is not closed", a.name));
        a.text = std::string_view(r.s_).substr(t.end, e - t.end);
        pos = e;
      }
      if (section.empty())
        r.fail(t.begin, fmt::format("array '{}' outside PointData, CellData, Points or Cells", a.name));
      arrays.push_back(a);
      sections.push_back(section);
    }
  }
  if (!seen_file) r.fail(0, "not a VTK XML file (no <VTKFile>)");
  if (!seen_piece) r.fail(0, "no <Piece> in the file");

  Decoder dec(r, fi);
  const auto as_double = [](std::string_view ty, const unsigned char* p) { return value_at(ty, p); };
  const auto as_int = [](std::string_view ty, const unsigned char* p) { return int_at(ty, p); };
  bool have_points = false, have_conn = false, have_off = false, have_types = false;
  for (std::size_t k = 0; k < arrays.size(); ++k) {
    const InArray& a = arrays[k];
    const std::string& sec = sections[k];
    if (sec == "Points") {
      d.points = dec.values<double>(a, as_double);
      if (a.components != 3 || d.points.size() != 3 * npoints)
        r.fail(a.at, fmt::format("Points has {} values, expected 3 × {}", d.points.size(), npoints));
      have_points = true;
    } else if (sec == "Cells") {
      if (a.name == "connectivity")
        d.connectivity = dec.values<std::int64_t>(a, as_int), have_conn = true;
      else if (a.name == "offsets")
        d.offsets = dec.values<std::int64_t>(a, as_int), have_off = true;
      else if (a.name == "types") {
        const auto v = dec.values<std::int64_t>(a, as_int);
        d.types.assign(v.begin(), v.end());
        have_types = true;
      }
    } else if (sec == "PointData" || sec == "CellData") {
      VtuArray out{a.name, a.components, dec.values<double>(a, as_double)};
      const std::size_t n = sec == "PointData" ? npoints : ncells;
      if (out.values.size() != n * a.components)
        r.fail(a.at, fmt::format("array '{}' has {} values, expected {} × {}", a.name, out.values.size(), n,
                                 a.components));
      (sec == "PointData" ? d.point_data : d.cell_data).push_back(std::move(out));
    }
  }
  if (npoints && !have_points) r.fail(0, "no <Points>");
  if (ncells && !(have_conn && have_off && have_types))
    r.fail(0, "<Cells> needs connectivity, offsets and types");
  if (d.types.size() != ncells || d.offsets.size() != ncells)
    r.fail(0, fmt::format("{} cell types and {} offsets for {} cells", d.types.size(), d.offsets.size(),
                          ncells));
  std::int64_t prev = 0;
  for (std::size_t c = 0; c < ncells; ++c) {
    if (d.offsets[c] < prev || d.offsets[c] > static_cast<std::int64_t>(d.connectivity.size()))
      r.fail(0,
             fmt::format("offset of cell {} ({}) is out of order or past the connectivity", c, d.offsets[c]));
    prev = d.offsets[c];
  }
  for (std::size_t k = 0; k < d.connectivity.size(); ++k)
    if (d.connectivity[k] < 0 || d.connectivity[k] >= static_cast<std::int64_t>(npoints))
      r.fail(0, fmt::format("connectivity entry {} references point {}, but there are {} points", k,
                            d.connectivity[k], npoints));
  return d;
}

Mesh VtuData::to_mesh(int gdim) const {
  const std::string w = fmt::format("'{}'", source);
  FEM_EXPECTS(!types.empty(), "{}: no cells to make a mesh of", w);
  const auto type = cell_type_from_vtk(types[0]);
  FEM_EXPECTS(type.has_value(), "{}: VTK cell type {} is not supported", w, int(types[0]));
  for (std::size_t c = 0; c < types.size(); ++c)
    FEM_EXPECTS(types[c] == types[0],
                "{}: cell {} has VTK type {}, cell 0 has {}; mixed meshes are not supported", w, c,
                int(types[c]), int(types[0]));
  const auto& info = cell_info(*type);
  const int npc = info.num_nodes;
  Mesh::Data m;
  m.cell_type = *type;
  if (gdim == 0) {
    gdim = std::max(info.dim, 1);
    for (std::size_t i = 0; i < num_points(); ++i)
      for (int dd = 2; dd >= gdim; --dd)
        if (points[3 * i + dd] != 0.0) gdim = dd + 1;
  }
  m.gdim = gdim;
  m.coords.resize(num_points() * gdim);
  for (std::size_t i = 0; i < num_points(); ++i)
    for (int dd = 0; dd < gdim; ++dd) m.coords[i * gdim + dd] = points[3 * i + dd];
  const auto order = vtk_node_order(*type);
  m.cells.resize(types.size() * npc);
  for (std::size_t c = 0; c < types.size(); ++c) {
    const std::int64_t begin = c ? offsets[c - 1] : 0;
    FEM_EXPECTS(offsets[c] - begin == npc, "{}: cell {} has {} nodes, {} needs {}", w, c, offsets[c] - begin,
                info.name, npc);
    for (int k = 0; k < npc; ++k) m.cells[c * npc + order[k]] = static_cast<index_t>(connectivity[begin + k]);
  }
  if (const VtuArray* tag = cell_array(kTagName); tag && tag->components == 1) {
    m.cell_tags.resize(types.size());
    for (std::size_t c = 0; c < types.size(); ++c) m.cell_tags[c] = static_cast<int>(tag->values[c]);
  }
  m.source = source;
  return Mesh(std::move(m));
}

VtuData read_pvtu(const std::filesystem::path& pvtu) {
  const std::string fname = pvtu.string();
  Reader r(read_file(pvtu), fname);
  struct Declared {
    std::string name;
    int components = 1;
    std::size_t at = 0;
  };
  struct PieceRef {
    std::string source;
    std::size_t at = 0;
  };
  std::vector<Declared> point_decl, cell_decl;
  std::vector<PieceRef> pieces;
  bool seen_file = false;
  std::string section;
  std::size_t pos = 0;
  Tag t;
  while (r.next_tag(pos, t)) {
    if (t.name == "VTKFile" && !t.closing) {
      seen_file = true;
      const auto type = t.attrs.find("type");
      const std::string ty = type == t.attrs.end() ? std::string() : type->second;
      if (ty != "PUnstructuredGrid")
        r.fail(t.begin, fmt::format("VTK file type '{}' is not PUnstructuredGrid", ty));
    } else if (t.name == "PPointData" || t.name == "PCellData" || t.name == "PPoints") {
      section = (t.closing || t.self_closing) ? "" : t.name;
    } else if (t.name == "PDataArray" && !t.closing) {
      if (section.empty()) r.fail(t.begin, "<PDataArray> outside PPointData, PCellData or PPoints");
      if (section == "PPoints") continue;
      Declared a;
      a.at = t.begin;
      const auto name = t.attrs.find("Name");
      if (name == t.attrs.end() || name->second.empty()) r.fail(t.begin, "<PDataArray> without a Name");
      a.name = name->second;
      if (const auto nc = t.attrs.find("NumberOfComponents"); nc != t.attrs.end()) {
        const auto [p, ec] =
            std::from_chars(nc->second.data(), nc->second.data() + nc->second.size(), a.components);
        if (ec != std::errc() || p != nc->second.data() + nc->second.size() || a.components < 1)
          r.fail(t.begin, fmt::format("array '{}' has NumberOfComponents '{}'", a.name, nc->second));
      }
      auto& decl = section == "PPointData" ? point_decl : cell_decl;
      for (const auto& d : decl)
        if (d.name == a.name)
          r.fail(t.begin, fmt::format("array '{}' is declared twice in <{}>", a.name, section));
      decl.push_back(std::move(a));
    } else if (t.name == "Piece" && !t.closing) {
      const auto src = t.attrs.find("Source");
      if (src == t.attrs.end() || src->second.empty()) r.fail(t.begin, "<Piece> without a Source");
      pieces.push_back({src->second, t.begin});
    }
  }
  if (!seen_file) r.fail(0, "not a VTK XML file (no <VTKFile>)");
  if (pieces.empty()) r.fail(0, "no <Piece> in the file");

  VtuData d;
  d.source = fname;
  for (const auto& a : point_decl) d.point_data.push_back({a.name, a.components, {}});
  for (const auto& a : cell_decl) d.cell_data.push_back({a.name, a.components, {}});
  for (const auto& piece : pieces) {
    const std::filesystem::path file = pvtu.parent_path() / piece.source;
    VtuData p;
    try {
      p = read_vtu(file);
    } catch (const ParseError&) {
      throw;  // names the piece, and where in it
    } catch (const Error& e) {
      r.fail(piece.at, fmt::format("piece '{}' cannot be read: {}", piece.source, e.what()));
    }
    const auto append = [&](std::vector<VtuArray>& into, const std::vector<Declared>& decl, bool point) {
      for (std::size_t k = 0; k < decl.size(); ++k) {
        const VtuArray* a = point ? p.point_array(decl[k].name) : p.cell_array(decl[k].name);
        const char* what = point ? "point" : "cell";
        if (!a)
          r.fail(piece.at, fmt::format("piece '{}' has no {} array '{}', which this file declares at byte {}",
                                       piece.source, what, decl[k].name, decl[k].at));
        if (a->components != decl[k].components)
          r.fail(piece.at, fmt::format("{} array '{}' of piece '{}' has {} components, this file declares {}",
                                       what, decl[k].name, piece.source, a->components, decl[k].components));
        into[k].values.insert(into[k].values.end(), a->values.begin(), a->values.end());
      }
    };
    append(d.point_data, point_decl, true);
    append(d.cell_data, cell_decl, false);
    const auto point0 = static_cast<std::int64_t>(d.num_points());
    const auto conn0 = static_cast<std::int64_t>(d.connectivity.size());
    d.points.insert(d.points.end(), p.points.begin(), p.points.end());
    for (const auto v : p.connectivity) d.connectivity.push_back(v + point0);
    for (const auto v : p.offsets) d.offsets.push_back(v + conn0);
    d.types.insert(d.types.end(), p.types.begin(), p.types.end());
  }
  return d;
}

std::vector<PvdStep> read_pvd(const std::filesystem::path& pvd) {
  Reader r(read_file(pvd), pvd.string());
  std::vector<PvdStep> steps;
  std::size_t pos = 0;
  Tag t;
  bool collection = false;
  while (r.next_tag(pos, t)) {
    if (t.name == "VTKFile" && !t.closing) {
      auto it = t.attrs.find("type");
      collection = it != t.attrs.end() && it->second == "Collection";
      if (!collection) r.fail(t.begin, "VTK file is not a Collection");
    } else if (t.name == "DataSet" && !t.closing) {
      auto f = t.attrs.find("file");
      if (f == t.attrs.end()) r.fail(t.begin, "<DataSet> without file");
      PvdStep s{0.0, f->second};
      if (auto ts = t.attrs.find("timestep"); ts != t.attrs.end()) {
        auto [p, ec] = std::from_chars(ts->second.data(), ts->second.data() + ts->second.size(), s.time);
        if (ec != std::errc()) r.fail(t.begin, fmt::format("bad timestep '{}'", ts->second));
      }
      steps.push_back(std::move(s));
    }
  }
  if (!collection) r.fail(0, "not a .pvd collection (no <VTKFile type=\"Collection\">)");
  return steps;
}

}  // namespace fem::mesh
