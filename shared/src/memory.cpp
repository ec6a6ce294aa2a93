// memory_available(), parse_bytes(), format_bytes() and prefault(): see fem/memory.hpp.
#include "fem/memory.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <optional>
#include <sstream>
#include <vector>

#include "fem/error.hpp"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14; older kernels answer EINVAL and nothing happens
#endif

namespace fem {

void prefault(void* data, std::size_t bytes) noexcept {
  constexpr std::size_t threshold = std::size_t{1} << 20;
  if (data == nullptr || bytes < threshold) return;
  constexpr std::uintptr_t huge = std::uintptr_t{2} << 20;
  const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<std::uintptr_t>(data);
  const auto end = begin + bytes;
  // 2 MB pages for the whole 2 MB-aligned interior of the range.
  const auto huge_begin = (begin + huge - 1) & ~(huge - 1), huge_end = end & ~(huge - 1);
  if (huge_end > huge_begin)
    madvise(reinterpret_cast<void*>(huge_begin), huge_end - huge_begin, MADV_HUGEPAGE);
  // Populate the pages that lie entirely inside the range (the partial ones at the ends may be
  // shared with other allocations; they fault in normally).
  const auto pop_begin = (begin + page - 1) & ~(page - 1), pop_end = end & ~(page - 1);
  if (pop_end > pop_begin)
    madvise(reinterpret_cast<void*>(pop_begin), pop_end - pop_begin, MADV_POPULATE_WRITE);
}

// --- sizes as text ------------------------------------------------------------------------

namespace {

std::string_view trim(std::string_view s) {
  const auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (!s.empty() && blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && blank(s.back())) s.remove_suffix(1);
  return s;
}

char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

}  // namespace

std::uint64_t parse_bytes(std::string_view text, std::string_view what) {
  const std::string_view s = trim(text);
  const auto bad = [&](std::string_view why) {
    return InvalidArgument(
        fmt::format("{}: '{}' is not a size in bytes ({}; expected e.g. 1073741824, 512M, "
                    "1.5G: K, M, G, T are powers of 1024)",
                    what, text, why));
  };
  if (s.empty()) throw bad("empty");
  if (!(s.front() >= '0' && s.front() <= '9') && s.front() != '.') throw bad("no number");
  double value = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value, std::chars_format::general);
  if (ec != std::errc() || !std::isfinite(value) || value < 0) throw bad("no number");
  std::string unit;
  for (char c : trim(std::string_view(end, static_cast<std::size_t>(s.data() + s.size() - end))))
    unit += lower(c);
  double scale = 1;
  if (!unit.empty() && unit != "b") {
    const std::string_view prefixes = "kmgtp";
    const auto k = prefixes.find(unit[0]);
    const std::string_view rest = std::string_view(unit).substr(1);
    if (k == std::string_view::npos || !(rest.empty() || rest == "b" || rest == "ib"))
      throw bad(fmt::format("unknown unit '{}'", unit));
    scale = std::ldexp(1.0, 10 * static_cast<int>(k + 1));
  }
  const double bytes = std::floor(value * scale);
  if (!(bytes < 18446744073709551616.0)) throw bad("more than 2^64 bytes");
  return static_cast<std::uint64_t>(bytes);
}

std::string format_bytes(double bytes) {
  if (!(bytes >= 1024)) return fmt::format("{:.0f} B", bytes);
  static constexpr const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = -1;
  while (bytes >= 1024 && u < 5) {
    bytes /= 1024;
    ++u;
  }
  const int decimals = bytes < 9.995 ? 2 : bytes < 99.95 ? 1 : 0;
  return fmt::format("{:.{}f} {}", bytes, decimals, units[u]);
}

// --- memory available ---------------------------------------------------------------------
//
// Cheap enough to ask before every factorization (measured 10 us here): the cgroup directories
// are found once per process, files are read with one read() into a buffer, and a cgroup
// without a limit costs one small read.

namespace {

constexpr std::uint64_t unlimited = std::numeric_limits<std::uint64_t>::max();

// The file's first 16 KiB (all of every file read here), or nullopt when it cannot be read.
std::optional<std::string> read_text(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string text(16384, '\0');
  std::size_t size = 0;
  while (size < text.size()) {
    const ssize_t got = ::read(fd, text.data() + size, text.size() - size);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    size += static_cast<std::size_t>(got);
  }
  ::close(fd);
  text.resize(size);
  return text;
}

// The lines of a text.
template <class F>
void for_each_line(std::string_view text, F&& f) {
  while (!text.empty()) {
    const auto eol = text.find('\n');
    f(text.substr(0, eol));
    if (eol == std::string_view::npos) break;
    text.remove_prefix(eol + 1);
  }
}

// A number from a cgroup file ("max" and v1's 2^63-ish "no limit" are unlimited).
std::optional<std::uint64_t> read_number(const std::string& path) {
  const auto text = read_text(path);
  if (!text) return std::nullopt;
  const std::string_view s = trim(*text);
  if (s == "max") return unlimited;
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v >= (std::uint64_t{1} << 62) ? unlimited : v;
}

// The value of `key` in a "key value" file (memory.stat) or a "Key:   value kB" one (meminfo,
// status; then times `scale`).
std::optional<std::uint64_t> read_field(const std::string& path, std::string_view key,
                                        std::uint64_t scale = 1) {
  const auto text = read_text(path);
  if (!text) return std::nullopt;
  std::optional<std::uint64_t> value;
  for_each_line(*text, [&](std::string_view l) {
    if (value || l.size() <= key.size() || l.substr(0, key.size()) != key) return;
    l.remove_prefix(key.size());
    if (l.front() != ':' && l.front() != ' ') return;
    if (l.front() == ':') l.remove_prefix(1);
    l = trim(l);
    std::uint64_t v = 0;
    if (std::from_chars(l.data(), l.data() + l.size(), v).ec == std::errc()) value = v * scale;
  });
  return value;
}

struct Limit {
  std::uint64_t bytes = unlimited;
  std::string source;
  void take(std::uint64_t b, std::string_view from) {
    if (b < bytes) {
      bytes = b;
      source = from;
    }
  }
};

// limit − (usage − inactive file pages), at least 0.
std::uint64_t headroom(std::uint64_t limit, std::uint64_t usage, std::uint64_t inactive_file) {
  const std::uint64_t used = usage > inactive_file ? usage - inactive_file : usage;
  return limit > used ? limit - used : 0;
}

// One cgroup whose memory limit applies to this process: the directory, and the version.
struct Cgroup {
  std::string dir;
  bool v2;
};

// Where this process' cgroup of one hierarchy is mounted: (mount point, mount root) from
// /proc/self/mountinfo, for the cgroup2 mount (v2) or the cgroup mount with the memory
// controller (v1).
std::optional<std::pair<std::string, std::string>> cgroup_mount(const std::string& mountinfo, bool v2) {
  std::optional<std::pair<std::string, std::string>> found;
  for_each_line(mountinfo, [&](std::string_view line) {
    const auto dash = line.find(" - ");
    if (found || dash == std::string_view::npos) return;
    std::istringstream head{std::string(line.substr(0, dash))}, tail{std::string(line.substr(dash + 3))};
    std::string id, parent, dev, root, point, fstype, source, options;
    head >> id >> parent >> dev >> root >> point;
    tail >> fstype >> source >> options;
    if (v2 ? fstype == "cgroup2"
           : (fstype == "cgroup" && ("," + options + ",").find(",memory,") != std::string::npos))
      found = std::make_pair(point, root);
  });
  return found;
}

// This process' cgroup of one hierarchy and its ancestors up to the mount point.
void add_cgroups(const std::string& mountinfo, bool v2, const std::string& path, std::vector<Cgroup>& out) {
  const auto mount = cgroup_mount(mountinfo, v2);
  if (!mount) return;
  const auto& [point, root] = *mount;
  // The path is relative to the cgroup namespace's root, like the mount's root.
  std::string relative = path;
  if (root != "/" && relative.rfind(root, 0) == 0) relative = relative.substr(root.size());
  std::string dir = point + (relative == "/" ? "" : relative);
  if (::access(dir.c_str(), F_OK) != 0) dir = point;  // not visible here: the mount's own
  for (;;) {
    out.push_back({dir, v2});
    if (dir.size() <= point.size()) break;
    dir.resize(dir.rfind('/'));
    if (dir.size() < point.size()) break;
  }
}

// The cgroups whose limits apply, found once: a process rarely changes its cgroup.
const std::vector<Cgroup>& cgroups() {
  static const std::vector<Cgroup> found = [] {
    std::vector<Cgroup> out;
    const auto membership = read_text("/proc/self/cgroup");
    const auto mountinfo = read_text("/proc/self/mountinfo");
    if (!membership || !mountinfo) return out;
    for_each_line(*membership, [&](std::string_view line) {
      // hierarchy-ID:controller-list:path
      const auto a = line.find(':');
      const auto b = a == std::string_view::npos ? a : line.find(':', a + 1);
      if (b == std::string_view::npos) return;
      const std::string controllers(line.substr(a + 1, b - a - 1)), path(line.substr(b + 1));
      if (line.substr(0, a) == "0" && controllers.empty())
        add_cgroups(*mountinfo, true, path, out);
      else if (("," + controllers + ",").find(",memory,") != std::string::npos)
        add_cgroups(*mountinfo, false, path, out);
    });
    return out;
  }();
  return found;
}

// The hard limit of one cgroup (nothing more is read when it has none). Only memory.max (v1
// memory.limit_in_bytes) is one: beyond it the kernel's OOM killer ends the process. Above
// memory.high the kernel only throttles the cgroup and reclaims harder, and the allocation still
// succeeds, so memory.high limits nothing here (refusing a problem for it would refuse one that
// runs, only slower).
void cgroup_limit(const Cgroup& g, Limit& limit) {
  struct Files {
    const char *max, *usage, *inactive;
  };
  const Files f = g.v2 ? Files{"memory.max", "memory.current", "inactive_file"}
                       : Files{"memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file"};
  const std::uint64_t max = read_number(g.dir + "/" + f.max).value_or(unlimited);
  if (max == unlimited) return;
  const auto usage = read_number(g.dir + "/" + f.usage);
  if (!usage) return;
  const std::uint64_t inactive = read_field(g.dir + "/memory.stat", f.inactive).value_or(0);
  limit.take(headroom(max, *usage, inactive), std::string("cgroup ") + f.max);
}

}  // namespace

MemoryAvailable detail::cgroup_memory_available(const std::string& dir, bool v2) {
  Limit limit;
  cgroup_limit({dir, v2}, limit);
  return {limit.bytes, limit.source};
}

MemoryAvailable memory_available() {
  if (const char* env = std::getenv("FEM_MEMORY_LIMIT"); env != nullptr && *env != '\0')
    return {parse_bytes(env, "FEM_MEMORY_LIMIT"), "FEM_MEMORY_LIMIT"};
  Limit limit;
  if (const auto meminfo = read_text("/proc/meminfo")) {
    std::optional<std::uint64_t> available, free, cached;
    for_each_line(*meminfo, [&](std::string_view l) {
      const auto colon = l.find(':');
      if (colon == std::string_view::npos) return;
      const std::string_view key = l.substr(0, colon), value = trim(l.substr(colon + 1));
      std::uint64_t kb = 0;
      if (std::from_chars(value.data(), value.data() + value.size(), kb).ec != std::errc()) return;
      if (key == "MemAvailable") available = kb * 1024;
      if (key == "MemFree") free = kb * 1024;
      if (key == "Cached") cached = kb * 1024;
    });
    if (available)
      limit.take(*available, "MemAvailable");
    else if (free)
      limit.take(*free + cached.value_or(0), "MemFree + Cached");
  }
  for (const Cgroup& g : cgroups()) cgroup_limit(g, limit);
  rlimit rl{};
  if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
    const std::uint64_t used = read_field("/proc/self/status", "VmSize", 1024).value_or(0);
    limit.take(rl.rlim_cur > used ? rl.rlim_cur - used : 0, "RLIMIT_AS");
  }
  if (getrlimit(RLIMIT_DATA, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
    const std::uint64_t used = read_field("/proc/self/status", "VmData", 1024).value_or(0);
    limit.take(rl.rlim_cur > used ? rl.rlim_cur - used : 0, "RLIMIT_DATA");
  }
  if (limit.source.empty()) limit.source = "not measurable";
  return {limit.bytes, limit.source};
}

std::uint64_t available_memory() { return memory_available().bytes; }

}  // namespace fem
