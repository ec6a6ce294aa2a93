// VTK XML unstructured grid writer and reader (appended raw, base64, ascii; zlib), parallel
// .pvtu records of pieces, PVD collections.
#include "fem/mesh/vtu.hpp"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "fem/atomic_file.hpp"
#include "fem/error.hpp"

namespace fem::mesh {
namespace {

static_assert(std::endian::native == std::endian::little, "the VTU writer assumes a little-endian host");

constexpr std::size_t kBlockSize = 1 << 16;

// What write_vtu writes, which write_pvtu declares: they must agree (ParaView refuses a .pvtu
// whose declarations differ from its pieces).
constexpr const char* kFieldType = "Float64";   // every point and cell field
constexpr const char* kPointsType = "Float64";  // the points, 3 components
constexpr const char* kTagName = "tag";         // the cell tags, first cell array
constexpr const char* kTagType = "Int32";

// ---------------------------------------------------------------------------------------------
// Node orders
constexpr int kIdentity[27] = {0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13,
                               14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26};
constexpr int kTet10[10] = {0, 1, 2, 3, 4, 5, 6, 7, 9, 8};
constexpr int kHex27[27] = {0,  1,  2,  3,  4,  5,  6,  7,  8,  11, 13, 9,  16, 18,
                            19, 17, 10, 12, 14, 15, 22, 23, 21, 24, 20, 25, 26};

// ---------------------------------------------------------------------------------------------
// base64
constexpr char kB64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string base64(const unsigned char* p, std::size_t n) {
  std::string out;
  out.reserve((n + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 3 <= n; i += 3) {
    const std::uint32_t v = (p[i] << 16) | (p[i + 1] << 8) | p[i + 2];
    out += kB64[v >> 18], out += kB64[(v >> 12) & 63], out += kB64[(v >> 6) & 63], out += kB64[v & 63];
  }
  if (i < n) {
    std::uint32_t v = p[i] << 16;
    if (i + 1 < n) v |= p[i + 1] << 8;
    out += kB64[v >> 18], out += kB64[(v >> 12) & 63];
    out += i + 1 < n ? kB64[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

int b64_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

// Decodes base64 text (whitespace ignored); a '=' ends a group, and decoding goes on after it
// (VTK writes the compression header and the blocks as separate base64 streams). Returns false
// on a bad character.
bool unbase64(std::string_view text, std::vector<unsigned char>& out,
              std::vector<std::size_t>* group_ends = nullptr) {
  std::uint32_t acc = 0;
  int have = 0;
  for (std::size_t k = 0; k < text.size(); ++k) {
    const char c = text[k];
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    if (c == '=') {
      if (have == 2) out.push_back(static_cast<unsigned char>(acc >> 4));
      if (have == 3) {
        out.push_back(static_cast<unsigned char>(acc >> 10));
        out.push_back(static_cast<unsigned char>(acc >> 2));
      }
      if (have > 0 && group_ends) group_ends->push_back(out.size());
      acc = 0, have = 0;
      continue;
    }
    const int v = b64_value(c);
    if (v < 0) return false;
    acc = (acc << 6) | static_cast<std::uint32_t>(v);
    if (++have == 4) {
      out.push_back(static_cast<unsigned char>(acc >> 16));
      out.push_back(static_cast<unsigned char>(acc >> 8));
      out.push_back(static_cast<unsigned char>(acc));
      acc = 0, have = 0;
    }
  }
  return have == 0;
}

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
  if (o.cell_tags) cd.push_back(make_array(kTagName, kTagType, 1, mesh.cell_tags(), ascii));
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
  if (const VtuArray* tag = cell_array("tag"); tag && tag->components == 1) {
    m.cell_tags.resize(types.size());
    for (std::size_t c = 0; c < types.size(); ++c) m.cell_tags[c] = static_cast<int>(tag->values[c]);
  }
  m.source = source;
  return Mesh(std::move(m));
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

// ---------------------------------------------------------------------------------------------
// PVD

PvdWriter::PvdWriter(std::filesystem::path pvd, VtuOptions options)
    : pvd_(std::move(pvd)), options_(options) {
  check_writable(pvd_);  // fail now, before the simulation, but leave a previous series alone
}

std::filesystem::path PvdWriter::next_path(std::string_view extension) const {
  FEM_EXPECTS(!extension.empty() && extension.front() == '.',
              "PvdWriter::next_path: extension '{}' does not start with '.'", extension);
  return pvd_.parent_path() / fmt::format("{}_{:06d}{}", pvd_.stem().string(), steps_.size(), extension);
}

std::filesystem::path PvdWriter::write(double time, const Mesh& mesh, std::span<const Field> point_data,
                                       std::span<const Field> cell_data) {
  const std::filesystem::path file = next_path(".vtu");
  write_vtu(file, mesh, point_data, cell_data, options_);  // the frame first, then the .pvd naming it
  steps_.push_back({time, file.filename().string()});
  rewrite();
  return file;
}

void PvdWriter::add(double time, const std::filesystem::path& file) {
  FEM_EXPECTS(!file.empty(), "PvdWriter::add: empty path for the step at time {} of '{}'", time,
              pvd_.string());
  steps_.push_back({time, relative_to_folder_of(file, pvd_)});
  rewrite();
}

void PvdWriter::rewrite() const {
  AtomicFile atomic(pvd_);
  std::ostream& out = atomic.stream();
  out << "<?xml version=\"1.0\"?>\n<VTKFile type=\"Collection\" version=\"0.1\" "
         "byte_order=\"LittleEndian\">\n"
         "  <Collection>\n";
  for (const auto& s : steps_)
    out << fmt::format("    <DataSet timestep=\"{}\" group=\"\" part=\"0\" file=\"{}\"/>\n", s.time,
                       xml_escape(s.file));
  out << "  </Collection>\n</VTKFile>\n";
  atomic.commit();
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
