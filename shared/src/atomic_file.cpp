// AtomicFile: a temporary file next to the file the target names (its links followed) behind a
// small buffered stream, renamed over that file on commit; FIFOs and devices written in place.
#include "fem/atomic_file.hpp"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <mutex>
#include <streambuf>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "fem/error.hpp"

namespace fem {

namespace {

std::atomic<std::int64_t> g_fail_after{-1};
std::atomic<std::int64_t> g_written{0};
std::atomic<std::uint64_t> g_counter{0};
std::atomic<std::int64_t> g_tokens{-1};  // the next temporary name's token (tests), or negative: random

std::string quoted(const std::filesystem::path& p) { return fmt::format("'{}'", p.string()); }

// The folder a file at `target` would go to, checked: fem::Error in words, naming the target as
// `shown`, when it cannot hold it.
std::filesystem::path folder_of(const std::filesystem::path& target, const std::string& shown) {
  if (target.empty()) throw Error("cannot write a file with an empty name");
  if (!target.has_filename() || target.filename() == "." || target.filename() == "..")
    throw Error(fmt::format("cannot write {}: it names a folder, not a file", shown));
  std::filesystem::path folder = target.parent_path();
  if (folder.empty()) folder = ".";
  std::error_code ec;
  if (std::filesystem::is_directory(folder, ec)) {
    if (std::filesystem::is_directory(target, ec))
      throw Error(fmt::format("cannot write {}: it is a folder", shown));
    return folder;
  }
  // Say which part of the path is in the way.
  std::filesystem::path prefix;
  for (const auto& part : folder) {
    prefix /= part;
    if (std::filesystem::is_directory(prefix, ec)) continue;
    if (std::filesystem::exists(prefix, ec))
      throw Error(fmt::format("cannot write {}: {} is a file, not a folder", shown, quoted(prefix)));
    throw Error(fmt::format("cannot write {}: the folder {} does not exist", shown, quoted(prefix)));
  }
  throw Error(fmt::format("cannot write {}: {} is not a folder", shown, quoted(folder)));
}

// A buffered stream over a file descriptor that remembers the first error (errno).
class FdBuf : public std::streambuf {
 public:
  explicit FdBuf(int fd) : fd_(fd), buffer_(1 << 16) {
    setp(buffer_.data(), buffer_.data() + buffer_.size());
  }
  int error() const noexcept { return error_; }
  bool flush_all() {
    if (error_) return false;
    const char* p = pbase();
    std::size_t left = static_cast<std::size_t>(pptr() - pbase());
    while (left > 0) {
      const std::int64_t limit = g_fail_after.load(std::memory_order_relaxed);
      std::size_t chunk = left;
      if (limit >= 0) {
        const std::int64_t room = limit - g_written.load(std::memory_order_relaxed);
        if (room <= 0) {
          error_ = ENOSPC;
          return false;
        }
        chunk = std::min<std::size_t>(chunk, static_cast<std::size_t>(room));
      }
      const ssize_t n = ::write(fd_, p, chunk);
      if (n < 0) {
        if (errno == EINTR) continue;
        error_ = errno;
        return false;
      }
      g_written.fetch_add(n, std::memory_order_relaxed);
      p += n;
      left -= static_cast<std::size_t>(n);
    }
    setp(buffer_.data(), buffer_.data() + buffer_.size());
    return true;
  }

 protected:
  int_type overflow(int_type c) override {
    if (!flush_all()) return traits_type::eof();
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(c);
      pbump(1);
    }
    return traits_type::not_eof(c);
  }
  int sync() override { return flush_all() ? 0 : -1; }

 private:
  int fd_;
  std::vector<char> buffer_;
  int error_ = 0;
};

// Where and how a target is written, once symbolic links are followed.
struct Destination {
  std::filesystem::path file;  ///< the file the content goes to (the target, or what its links lead to)
  bool direct = false;         ///< written in place: a FIFO, a device, a file named by a file descriptor
  int flags = 0;               ///< open flags of a direct write, besides O_WRONLY | O_CLOEXEC | O_NOCTTY
  int descriptor = -1;         ///< this process' open descriptor the file names (/dev/stdout: 1)
  bool exists = false;         ///< an existing regular file, to be replaced
  struct stat st {};           ///< its status (mode, owner), when it exists
};

// "/proc/<pid>/fd/<n>" (or /proc/<pid>/task/<tid>/fd/<n>): a path naming an open file descriptor,
// where /dev/stdout and /dev/fd/<n> lead. Returns n when <pid> is this process, else -1.
int own_descriptor(const std::filesystem::path& p) {
  std::vector<std::string> part;
  for (const auto& c : p) part.push_back(c.string());
  if (part.size() < 5 || part[1] != "proc" || part[part.size() - 2] != "fd") return -1;
  if (part.size() != 5 && !(part.size() == 7 && part[3] == "task")) return -1;
  const auto number = [](const std::string& t) {
    int v = 0;
    const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    return ec == std::errc() && end == t.data() + t.size() ? v : -1;
  };
  return number(part[2]) == ::getpid() ? number(part.back()) : -1;
}

// Follows the symbolic links of `target` (each hop's folder made canonical) to the file a write
// should reach, and classifies it. Paths into /proc and /sys are written in place (nothing can
// be renamed there, and their links, like /proc/self/fd/1 -> "pipe:[123]", are no paths).
Destination resolve(const std::filesystem::path& target) {
  std::filesystem::path p = target;
  for (int hop = 0; hop < 40; ++hop) {
    const std::string shown =
        hop == 0 ? quoted(target) : fmt::format("{} (a link to {})", quoted(target), quoted(p));
    const std::filesystem::path folder = folder_of(p, shown);
    std::error_code ec;
    const std::filesystem::path real = std::filesystem::canonical(folder, ec);
    if (ec) throw Error(fmt::format("cannot write {}: {}", shown, ec.message()));
    p = real / p.filename();
    Destination d;
    d.file = p;
    const std::string text = p.string();
    if (text.rfind("/proc/", 0) == 0 || text.rfind("/sys/", 0) == 0) {
      d.direct = true;
      // One of this process' descriptors (--json /dev/stdout) is written through a duplicate:
      // where it stands (after what the process printed to a shell's `> log`), whoever made the
      // pipe (reopening /proc/self/fd/1 checks the pipe's owner).
      d.descriptor = own_descriptor(p);
      if (d.descriptor < 0 && ::stat(p.c_str(), &d.st) == 0 && S_ISREG(d.st.st_mode)) d.flags = O_TRUNC;
      return d;
    }
    if (::lstat(p.c_str(), &d.st) != 0) {
      if (errno == ENOENT) return d;  // a new file
      throw Error(fmt::format("cannot write {}: {}", shown, std::strerror(errno)));
    }
    if (S_ISLNK(d.st.st_mode)) {
      const std::filesystem::path link = std::filesystem::read_symlink(p, ec);
      if (ec) throw Error(fmt::format("cannot write {}: {}", shown, ec.message()));
      p = link.is_absolute() ? link : real / link;
      continue;
    }
    if (S_ISDIR(d.st.st_mode)) throw Error(fmt::format("cannot write {}: it is a folder", shown));
    if (S_ISREG(d.st.st_mode)) {
      d.exists = true;
      return d;
    }
    d.direct = true;  // a FIFO, a device, a socket: no atomicity there, and none expected
    return d;
  }
  throw Error(fmt::format("cannot write {}: {}", quoted(target), std::strerror(ELOOP)));
}

// The permissions a new file gets from open(..., 0666): 0666 less the umask. Read from
// /proc/self/status ("Umask:", Linux 4.7+) because umask() can only be read by setting it: the
// umask(0); umask(old) pair would, for that instant, give files that other threads of the process
// create (in any library) mode 0666. Only where /proc has no such line does it fall back to that
// pair, under a mutex (which orders it against other AtomicFiles only).
mode_t new_file_mode() {
  if (const int fd = ::open("/proc/self/status", O_RDONLY | O_CLOEXEC); fd >= 0) {
    char text[4096];
    std::size_t size = 0;
    for (ssize_t n; size < sizeof text && (n = ::read(fd, text + size, sizeof text - size)) != 0;) {
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) break;
      size += static_cast<std::size_t>(n);
    }
    ::close(fd);
    const std::string_view status(text, size);
    if (const auto at = status.find("\nUmask:"); at != std::string_view::npos) {
      unsigned mask = 0;
      std::size_t i = at + 7;
      while (i < status.size() && (status[i] == ' ' || status[i] == '\t')) ++i;
      const std::size_t first = i;
      for (; i < status.size() && status[i] >= '0' && status[i] <= '7'; ++i)
        mask = mask * 8 + (status[i] - '0');
      if (i > first) return static_cast<mode_t>(0666 & ~mask);
    }
  }
  static std::mutex m;
  const std::lock_guard lock(m);
  const mode_t mask = ::umask(0);
  ::umask(mask);
  return static_cast<mode_t>(0666 & ~mask);
}

// 64 bits for a temporary file's name: random (getrandom, else a mix of the clock, the address
// space and a counter), or the tests' predictable sequence.
std::uint64_t name_token() {
  if (g_tokens.load(std::memory_order_relaxed) >= 0)
    return static_cast<std::uint64_t>(g_tokens.fetch_add(1, std::memory_order_relaxed));
  std::uint64_t r = 0;
  if (::getrandom(&r, sizeof r, GRND_NONBLOCK) == static_cast<ssize_t>(sizeof r)) return r;
  std::uint64_t z = static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
                    reinterpret_cast<std::uintptr_t>(&r) ^
                    (g_counter.fetch_add(1, std::memory_order_relaxed) * 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;  // splitmix64's finalizer
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

constexpr int kNameAttempts = 16;

// fem::Error unless this process' `descriptor` is open for writing.
void require_writable_descriptor(int descriptor, const std::filesystem::path& target) {
  const int mode = ::fcntl(descriptor, F_GETFL);
  if (mode < 0 || (mode & O_ACCMODE) == O_RDONLY)
    throw Error(fmt::format("cannot write {}: descriptor {}: {}", quoted(target), descriptor,
                            std::strerror(mode < 0 ? errno : EBADF)));
}

}  // namespace

struct AtomicFile::Impl {
  Destination dest;
  std::filesystem::path temp;  ///< empty for a direct write
  int fd = -1;
  std::unique_ptr<FdBuf> buf;
  std::unique_ptr<std::ostream> out;
  bool done = false;
};

AtomicFile::AtomicFile(std::filesystem::path target)
    : target_(std::move(target)), impl_(std::make_unique<Impl>()) {
  Destination& d = impl_->dest;
  d = resolve(target_);
  if (d.direct && d.descriptor >= 0) {
    require_writable_descriptor(d.descriptor, target_);
    impl_->fd = ::fcntl(d.descriptor, F_DUPFD_CLOEXEC, 0);
    if (impl_->fd < 0)
      throw Error(fmt::format("cannot write {}: descriptor {}: {}", quoted(target_), d.descriptor,
                              std::strerror(errno)));
  } else if (d.direct) {
    // Blocks on a FIFO until it has a reader, as any writer of a FIFO does.
    do impl_->fd = ::open(d.file.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY | d.flags);
    while (impl_->fd < 0 && errno == EINTR);
    if (impl_->fd < 0) throw Error(fmt::format("cannot write {}: {}", quoted(target_), std::strerror(errno)));
  } else {
    // Hidden, unique per file and attempt, created only if nothing is there (O_EXCL) and never
    // through a link (O_EXCL and O_NOFOLLOW): a link planted at the name in a shared folder cannot
    // redirect the write. Readable by its owner only until it is complete.
    const std::filesystem::path folder = d.file.parent_path();
    int error = 0;
    for (int attempt = 0; attempt < kNameAttempts && impl_->fd < 0; ++attempt) {
      impl_->temp =
          folder / fmt::format(".{}.{}.{:016x}.tmp", d.file.filename().string(), ::getpid(), name_token());
      impl_->fd = ::open(impl_->temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
      error = impl_->fd < 0 ? errno : 0;
      if (impl_->fd < 0 && error != EEXIST && error != EINTR) break;
    }
    if (impl_->fd < 0) {
      impl_->temp.clear();
      throw Error(fmt::format("cannot write {}: {}", quoted(target_), std::strerror(error)));
    }
  }
  impl_->buf = std::make_unique<FdBuf>(impl_->fd);
  impl_->out = std::make_unique<std::ostream>(impl_->buf.get());
}

AtomicFile::~AtomicFile() {
  if (!impl_ || impl_->done) return;
  if (impl_->fd >= 0) ::close(impl_->fd);
  std::error_code ec;
  if (!impl_->temp.empty()) std::filesystem::remove(impl_->temp, ec);
}

std::ostream& AtomicFile::stream() { return *impl_->out; }

void AtomicFile::commit() {
  FEM_EXPECTS(!impl_->done, "AtomicFile {}: committed twice", quoted(target_));
  const Destination& d = impl_->dest;
  impl_->out->flush();
  int error = impl_->buf->flush_all() ? 0 : impl_->buf->error();
  if (!error && !*impl_->out) error = EIO;
  const int fd = impl_->fd;
  if (!error && !d.direct) {
    // The replaced file's permissions (and owner, where this process may give it: root writing
    // a user's file), else what open() would have given a new file. Best effort: where the file
    // system has no permissions (FAT) and refuses, the content still counts and the file stays
    // readable by its owner only, the safe side.
    if (d.exists) {
      if ((d.st.st_uid != ::geteuid() || d.st.st_gid != ::getegid()) &&
          ::fchown(fd, d.st.st_uid, d.st.st_gid) != 0) {
        // not allowed (only root gives files away): the new file is this user's, as a new one would be
      }
    }
    if (::fchmod(fd, d.exists ? d.st.st_mode & 07777 : new_file_mode()) != 0) {
      // kept at 0600, see above
    }
  }
  impl_->fd = -1;
  if (::close(fd) != 0 && !error) error = errno;
  std::error_code ec;
  if (!error && !d.direct) {
    std::filesystem::rename(impl_->temp, d.file, ec);
    if (ec) error = ec.value();
  }
  impl_->done = true;
  if (error) {
    if (!d.direct) std::filesystem::remove(impl_->temp, ec);
    throw Error(fmt::format("cannot write {}: {}{}", quoted(target_), std::strerror(error),
                            d.direct ? "" : " (the previous file, if any, is left as it was)"));
  }
}

void write_file_atomically(const std::filesystem::path& target, std::string_view bytes) {
  AtomicFile f(target);
  f.write(bytes);
  f.commit();
}

StagedFiles::StagedFiles(const std::filesystem::path& folder, std::string_view name)
    : folder_(folder.empty() ? std::filesystem::path(".") : folder) {
  check_writable(folder_ / std::string(name));
  int error = 0;
  for (int attempt = 0; attempt < kNameAttempts; ++attempt) {
    const auto candidate = folder_ / fmt::format(".{}.{}.{:016x}.tmp", name, ::getpid(), name_token());
    if (::mkdir(candidate.c_str(), 0700) == 0) {
      staging_ = candidate;
      return;
    }
    error = errno;
    if (error != EEXIST && error != EINTR) break;
  }
  throw Error(fmt::format("cannot write {}: {}", quoted(folder_ / std::string(name)), std::strerror(error)));
}

StagedFiles::~StagedFiles() {
  std::error_code ec;
  if (!done_) std::filesystem::remove_all(staging_, ec);
}

void StagedFiles::commit(AtomicFile* last) {
  FEM_EXPECTS(!done_, "StagedFiles {}: committed twice", quoted(staging_));
  done_ = true;
  std::error_code ec;
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(staging_, ec)) {
    std::string n = e.path().filename().string();
    if (n.front() != '.') names.push_back(std::move(n));
  }
  std::sort(names.begin(), names.end());
  // Replaced files wait in the private folder until the whole output is in place.
  const std::filesystem::path replaced = staging_ / ".replaced";
  struct Move {
    std::string name;
    bool replaced;
  };
  std::vector<Move> moves;
  try {
    if (ec) throw Error(fmt::format("cannot read {}: {}", quoted(staging_), ec.message()));
    std::filesystem::create_directory(replaced);
    for (const auto& n : names) {
      const auto target = folder_ / n;
      const auto status = std::filesystem::symlink_status(target);
      if (std::filesystem::is_directory(status))  // never replaced (nor removed with the replaced files)
        throw Error(fmt::format("cannot write {}: it is a folder (the previous files are left as they were)",
                                quoted(target)));
      const bool exists = std::filesystem::exists(status);
      if (exists) std::filesystem::rename(target, replaced / n);
      moves.push_back({n, exists});
      std::filesystem::rename(staging_ / n, target);
    }
    if (last) last->commit();
  } catch (const std::exception& e) {
    for (auto m = moves.rbegin(); m != moves.rend(); ++m) {  // back as it was, best effort
      std::filesystem::rename(folder_ / m->name, staging_ / m->name, ec);
      if (m->replaced) std::filesystem::rename(replaced / m->name, folder_ / m->name, ec);
    }
    std::filesystem::remove_all(staging_, ec);
    if (dynamic_cast<const Error*>(&e)) throw;
    throw Error(fmt::format("cannot write into {}: {} (the previous files are left as they were)",
                            quoted(folder_), e.what()));
  }
  std::filesystem::remove_all(staging_, ec);
}

void check_writable(const std::filesystem::path& target) {
  const Destination d = resolve(target);
  if (d.descriptor >= 0) return require_writable_descriptor(d.descriptor, target);
  // A direct write needs the file itself writable, a replacement its folder.
  const std::filesystem::path what = d.direct ? d.file : d.file.parent_path();
  if (::access(what.c_str(), W_OK) != 0)
    throw Error(fmt::format("cannot write {}: {}", quoted(target), std::strerror(errno)));
}

void detail::fail_writes_after(std::int64_t bytes) {
  g_written.store(0);
  g_fail_after.store(bytes);
}

void detail::temp_name_tokens_from(std::int64_t first) { g_tokens.store(first); }

}  // namespace fem
