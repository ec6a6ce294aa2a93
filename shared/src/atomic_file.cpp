// AtomicFile: a temporary file in the target's folder behind a small buffered stream, renamed
// over the target on commit.
#include "fem/atomic_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <streambuf>
#include <system_error>
#include <vector>

#include "fem/error.hpp"

namespace fem {

namespace {

std::atomic<std::int64_t> g_fail_after{-1};
std::atomic<std::int64_t> g_written{0};
std::atomic<std::uint64_t> g_counter{0};

std::string quoted(const std::filesystem::path& p) { return fmt::format("'{}'", p.string()); }

// The folder a file at `target` would go to, checked: fem::Error in words when it cannot hold it.
std::filesystem::path folder_of(const std::filesystem::path& target) {
  if (target.empty()) throw Error("cannot write a file with an empty name");
  if (!target.has_filename() || target.filename() == "." || target.filename() == "..")
    throw Error(fmt::format("cannot write {}: it names a folder, not a file", quoted(target)));
  std::filesystem::path folder = target.parent_path();
  if (folder.empty()) folder = ".";
  std::error_code ec;
  if (std::filesystem::is_directory(folder, ec)) {
    if (std::filesystem::is_directory(target, ec))
      throw Error(fmt::format("cannot write {}: it is a folder", quoted(target)));
    return folder;
  }
  // Say which part of the path is in the way.
  std::filesystem::path prefix;
  for (const auto& part : folder) {
    prefix /= part;
    if (std::filesystem::is_directory(prefix, ec)) continue;
    if (std::filesystem::exists(prefix, ec))
      throw Error(fmt::format("cannot write {}: {} is a file, not a folder", quoted(target), quoted(prefix)));
    throw Error(fmt::format("cannot write {}: the folder {} does not exist", quoted(target), quoted(prefix)));
  }
  throw Error(fmt::format("cannot write {}: {} is not a folder", quoted(target), quoted(folder)));
}

// A buffered stream over a file descriptor that remembers the first error (errno).
class FdBuf : public std::streambuf {
 public:
  explicit FdBuf(int fd) : fd_(fd), buffer_(1 << 16) { setp(buffer_.data(), buffer_.data() + buffer_.size()); }
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

}  // namespace

struct AtomicFile::Impl {
  std::filesystem::path temp;
  int fd = -1;
  std::unique_ptr<FdBuf> buf;
  std::unique_ptr<std::ostream> out;
  bool done = false;
};

AtomicFile::AtomicFile(std::filesystem::path target) : target_(std::move(target)), impl_(std::make_unique<Impl>()) {
  const auto folder = folder_of(target_);
  // Hidden, unique per process and file: concurrent writers of one target never share a temp.
  impl_->temp = folder / fmt::format(".{}.{}.{}.tmp", target_.filename().string(), ::getpid(),
                                     g_counter.fetch_add(1, std::memory_order_relaxed));
  impl_->fd = ::open(impl_->temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (impl_->fd < 0)
    throw Error(fmt::format("cannot write {}: {}", quoted(target_), std::strerror(errno)));
  impl_->buf = std::make_unique<FdBuf>(impl_->fd);
  impl_->out = std::make_unique<std::ostream>(impl_->buf.get());
}

AtomicFile::~AtomicFile() {
  if (!impl_ || impl_->done) return;
  if (impl_->fd >= 0) ::close(impl_->fd);
  std::error_code ec;
  std::filesystem::remove(impl_->temp, ec);
}

std::ostream& AtomicFile::stream() { return *impl_->out; }

void AtomicFile::commit() {
  FEM_EXPECTS(!impl_->done, "AtomicFile {}: committed twice", quoted(target_));
  impl_->out->flush();
  int error = impl_->buf->flush_all() ? 0 : impl_->buf->error();
  if (!error && !*impl_->out) error = EIO;
  const int fd = impl_->fd;
  impl_->fd = -1;
  if (::close(fd) != 0 && !error) error = errno;
  std::error_code ec;
  if (!error) {
    std::filesystem::rename(impl_->temp, target_, ec);
    if (ec) error = ec.value();
  }
  if (error) {
    std::filesystem::remove(impl_->temp, ec);
    impl_->done = true;
    throw Error(fmt::format("cannot write {}: {} (the previous file, if any, is left as it was)", quoted(target_),
                            std::strerror(error)));
  }
  impl_->done = true;
}

void write_file_atomically(const std::filesystem::path& target, std::string_view bytes) {
  AtomicFile f(target);
  f.write(bytes);
  f.commit();
}

void check_writable(const std::filesystem::path& target) {
  const auto folder = folder_of(target);
  if (::access(folder.c_str(), W_OK) != 0)
    throw Error(fmt::format("cannot write {}: {}", quoted(target), std::strerror(errno)));
}

void detail::fail_writes_after(std::int64_t bytes) {
  g_written.store(0);
  g_fail_after.store(bytes);
}

}  // namespace fem
