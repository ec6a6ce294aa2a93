// A bounds-checked cursor over a mesh file in memory, shared by the readers: whitespace-separated
// ASCII numbers (std::from_chars, fast_float) and binary values of either byte order. Every
// failure is a fem::ParseError naming the file and the line (text) or byte offset (binary);
// lines are counted only when an error is thrown, so the hot loops never track them.
#pragma once

#include <fast_float/fast_float.h>

#include <bit>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>

#include "fem/error.hpp"

namespace fem::mesh::detail {

class Scanner {
 public:
  Scanner(std::string_view bytes, std::string name)
      : begin_(bytes.data()), p_(bytes.data()), end_(bytes.data() + bytes.size()), name_(std::move(name)) {}

  /// Positions are reported as byte offsets from here on (the file turned out to be binary).
  void set_binary(bool binary) noexcept { binary_ = binary; }
  bool binary() const noexcept { return binary_; }
  /// Binary values are stored in the other byte order.
  void set_swap(bool swap) noexcept { swap_ = swap; }

  const char* pos() const noexcept { return p_; }
  void seek(const char* p) noexcept { p_ = p; }
  const char* begin() const noexcept { return begin_; }
  const char* end() const noexcept { return end_; }
  std::size_t remaining() const noexcept { return static_cast<std::size_t>(end_ - p_); }
  bool at_end() const noexcept { return p_ >= end_; }
  const std::string& name() const noexcept { return name_; }

  /// Throw a ParseError at `at` (a pointer into the file).
  [[noreturn]] void fail_at(const char* at, const std::string& message) const {
    if (binary_) throw ParseError(name_, ParseError::Position::byte, offset_of(at), message);
    throw ParseError(name_, ParseError::Position::line, line_of(at), message);
  }
  /// "line N" (text) or "byte N" (binary) of `at`, as fail_at() would report it: for messages
  /// that name a second place in the file (where something was given first).
  std::string where(const char* at) const {
    return binary_ ? fmt::format("byte {}", offset_of(at)) : fmt::format("line {}", line_of(at));
  }
  [[noreturn]] void fail(const std::string& message) const { fail_at(p_, message); }

  // ---- ASCII --------------------------------------------------------------------------------

  static bool is_space(char c) noexcept {
    return c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == '\v' || c == '\f';
  }

  void skip_space() noexcept {
    while (p_ < end_ && is_space(*p_)) ++p_;
  }
  /// Skip to just after the next newline (or to the end).
  void skip_line() noexcept {
    while (p_ < end_ && *p_ != '\n') ++p_;
    if (p_ < end_) ++p_;
  }

  /// The next whitespace-separated token; empty at the end of the file.
  std::string_view token() noexcept {
    skip_space();
    const char* s = p_;
    while (p_ < end_ && !is_space(*p_)) ++p_;
    return {s, static_cast<std::size_t>(p_ - s)};
  }
  std::string_view peek_token() noexcept {
    const char* save = p_;
    auto t = token();
    p_ = save;
    return t;
  }

  /// A short, printable rendering of what was found at the current position, for messages.
  std::string found() const {
    const char* s = p_;
    while (s < end_ && is_space(*s)) ++s;
    if (s >= end_) return "end of file";
    std::string t;
    for (const char* c = s; c < end_ && !is_space(*c) && t.size() < 24; ++c)
      t += (*c >= 32 && *c < 127) ? *c : '?';
    return "'" + t + "'";
  }

  [[noreturn]] void expected(std::string_view what) const {
    const char* s = p_;
    while (s < end_ && is_space(*s)) ++s;
    fail_at(s, fmt::format("expected {}, found {}", what, found()));
  }

  /// The next token must be `word` (e.g. "$EndNodes").
  void expect_word(std::string_view word) {
    skip_space();
    const char* s = p_;
    if (token() != word) {
      p_ = s;
      expected(fmt::format("'{}'", word));
    }
  }

  /// An ASCII integer of type T (signed or unsigned), range-checked.
  template <class T>
  T integer(std::string_view what) {
    skip_space();
    T value{};
    const char* s = p_;
    if (s < end_ && *s == '+') ++s;
    const auto [ptr, ec] = std::from_chars(s, end_, value);
    if (ec == std::errc::result_out_of_range) {
      fail_at(p_, fmt::format("{} {} out of range", what, found()));
    }
    if (ec != std::errc() || (ptr < end_ && !is_space(*ptr))) expected(what);
    p_ = ptr;
    return value;
  }

  /// An ASCII real number (also accepts nan/inf; callers check finiteness where it matters).
  double real(std::string_view what) {
    skip_space();
    double value = 0;
    const char* s = p_;
    if (s < end_ && *s == '+') ++s;
    const auto r = fast_float::from_chars(s, end_, value);
    if (r.ec != std::errc() || (r.ptr < end_ && !is_space(*r.ptr))) {
      // fast_float rejects out-of-range exponents only by saturating; anything else is garbage.
      expected(what);
    }
    p_ = r.ptr;
    return value;
  }

  /// A real that must be finite.
  double finite_real(std::string_view what) {
    skip_space();
    const char* s = p_;
    const double v = real(what);
    if (!std::isfinite(v)) fail_at(s, fmt::format("expected a finite {}, found {}", what, v));
    return v;
  }

  /// A double-quoted string (Gmsh physical names); the quotes are not part of the result.
  std::string_view quoted(std::string_view what) {
    skip_space();
    if (p_ >= end_ || *p_ != '"') expected(what);
    const char* s = ++p_;
    while (p_ < end_ && *p_ != '"' && *p_ != '\n') ++p_;
    if (p_ >= end_ || *p_ != '"') fail_at(s - 1, fmt::format("unterminated {}", what));
    std::string_view r(s, static_cast<std::size_t>(p_ - s));
    ++p_;
    return r;
  }

  // ---- binary -------------------------------------------------------------------------------

  /// A binary value of type T in the file's byte order.
  template <class T>
  T bin(std::string_view what) {
    if (remaining() < sizeof(T))
      fail(fmt::format("expected {} ({} bytes), found end of file after {} bytes", what, sizeof(T),
                       remaining()));
    T v;
    std::memcpy(&v, p_, sizeof(T));
    p_ += sizeof(T);
    return swap_ ? byteswap(v) : v;
  }
  /// Read n values of T in bulk (bounds already checked by the caller or checked here).
  template <class T>
  void bin_array(T* out, std::size_t n, std::string_view what) {
    if (n > remaining() / sizeof(T))
      fail(fmt::format("expected {} × {} ({} bytes), but only {} bytes remain", n, what, n * sizeof(T),
                       remaining()));
    if (n == 0) return;  // out may be null (an empty vector's data())
    std::memcpy(out, p_, n * sizeof(T));
    p_ += n * sizeof(T);
    if (swap_)
      for (std::size_t i = 0; i < n; ++i) out[i] = byteswap(out[i]);
  }

  template <class T>
  static T byteswap(T v) noexcept {
    static_assert(std::is_trivially_copyable_v<T>);
    unsigned char b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    for (std::size_t i = 0; i < sizeof(T) / 2; ++i) std::swap(b[i], b[sizeof(T) - 1 - i]);
    std::memcpy(&v, b, sizeof(T));
    return v;
  }

  /// A count from the file that claims `count` items of at least `min_bytes` each must fit in
  /// the bytes that remain: checked before anything is allocated for them.
  void check_count(std::uint64_t count, std::size_t min_bytes, std::string_view what, const char* at) const {
    if (min_bytes == 0) min_bytes = 1;
    if (count > remaining() / min_bytes)
      fail_at(at, fmt::format("{} {} cannot fit in the {} bytes that remain (at least {} bytes each)", what,
                              count, remaining(), min_bytes));
  }

 private:
  std::uint64_t offset_of(const char* at) const noexcept {
    if (at < begin_ || at > end_) at = end_;
    return static_cast<std::uint64_t>(at - begin_);
  }
  // Lines are counted only here, on the error path.
  std::uint64_t line_of(const char* at) const noexcept {
    if (at < begin_ || at > end_) at = end_;
    while (at < end_ && is_space(*at)) ++at;  // a position before a token means that token's line
    std::uint64_t line = 1;
    for (const char* c = begin_; c < at; ++c) line += *c == '\n';
    return line;
  }

  const char* begin_;
  const char* p_;
  const char* end_;
  std::string name_;
  bool binary_ = false;
  bool swap_ = false;
};

}  // namespace fem::mesh::detail
