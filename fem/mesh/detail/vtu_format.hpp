// Internal: what the VTU reader (vtu_read.cpp) and the writers (vtu_write.cpp) share: the type
// names write_vtu writes and write_pvtu declares, and base64, both ways (the "binary" format of
// a <DataArray>).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fem::mesh::detail {

static_assert(std::endian::native == std::endian::little,
              "the VTU reader and writers assume a little-endian host");

// What write_vtu writes, which write_pvtu declares: they must agree (ParaView refuses a .pvtu
// whose declarations differ from its pieces).
inline constexpr const char* kFieldType = "Float64";   // every point and cell field
inline constexpr const char* kPointsType = "Float64";  // the points, 3 components
inline constexpr const char* kTagName = "tag";         // the cell tags, first cell array
inline constexpr const char* kTagType = "Int32";

// ---------------------------------------------------------------------------------------------
// base64
inline constexpr char kB64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

inline std::string base64(const unsigned char* p, std::size_t n) {
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

inline int b64_value(char c) {
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
inline bool unbase64(std::string_view text, std::vector<unsigned char>& out,
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

}  // namespace fem::mesh::detail
