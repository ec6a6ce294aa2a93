// Reading a mesh file: the memory map the readers parse in place, and read(), which picks the
// reader from the file's content (or, failing that, its extension).
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "fem/error.hpp"
#include "fem/mesh/detail/mapped_file.hpp"
#include "fem/mesh/read.hpp"

namespace fem::mesh {
namespace detail {

MappedFile::MappedFile(const std::filesystem::path& file) {
  const std::string name = file.string();
  const int fd = ::open(name.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    throw ParseError(name, ParseError::Position::none, 0,
                     fmt::format("cannot open: {}", std::strerror(errno)));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    throw ParseError(name, ParseError::Position::none, 0, fmt::format("cannot read: {}", std::strerror(err)));
  }
  if (!S_ISREG(st.st_mode)) {  // errno says nothing here (open succeeded): the kind of file does
    ::close(fd);
    const char* kind = S_ISDIR(st.st_mode)    ? "a directory"
                       : S_ISFIFO(st.st_mode) ? "a FIFO"
                       : S_ISCHR(st.st_mode)  ? "a character device"
                       : S_ISBLK(st.st_mode)  ? "a block device"
                       : S_ISSOCK(st.st_mode) ? "a socket"
                                              : "a special file";
    throw ParseError(name, ParseError::Position::none, 0,
                     fmt::format("cannot read: it is {}, not a mesh file", kind));
  }
  size_ = static_cast<std::size_t>(st.st_size);
  if (size_ > 0) {
    data_ = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (data_ == MAP_FAILED) {
      const int err = errno;
      data_ = nullptr;
      ::close(fd);
      throw ParseError(name, ParseError::Position::none, 0,
                       fmt::format("cannot map: {}", std::strerror(err)));
    }
    ::madvise(data_, size_, MADV_SEQUENTIAL);
  }
  ::close(fd);
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(data_, size_);
}

}  // namespace detail

namespace {
std::string_view first_word(std::string_view bytes) {
  std::size_t i = 0;
  while (i < bytes.size() && (bytes[i] == ' ' || bytes[i] == '\n' || bytes[i] == '\r' || bytes[i] == '\t'))
    ++i;
  std::size_t j = i;
  while (j < bytes.size() && !(bytes[j] == ' ' || bytes[j] == '\n' || bytes[j] == '\r' || bytes[j] == '\t'))
    ++j;
  return bytes.substr(i, j - i);
}
}  // namespace

Mesh read(const std::filesystem::path& file) {
  const detail::MappedFile map(file);
  const auto bytes = map.bytes();
  const auto word = first_word(bytes);
  const std::string name = file.string();
  if (word == "$MeshFormat") return read_gmsh(bytes, name);
  if (word == "MeshVersionFormatted" || word.starts_with('#')) return read_medit(bytes, name);
  const auto ext = file.extension();
  if (ext == ".msh") return read_gmsh(bytes, name);
  if (ext == ".mesh") return read_medit(bytes, name);
  throw ParseError(name, ParseError::Position::line, 1,
                   "not a mesh file: expected '$MeshFormat' (Gmsh) or 'MeshVersionFormatted' (MEDIT)");
}

Mesh read_gmsh(const std::filesystem::path& file) {
  const detail::MappedFile map(file);
  return read_gmsh(map.bytes(), file.string());
}

Mesh read_medit(const std::filesystem::path& file) {
  const detail::MappedFile map(file);
  return read_medit(map.bytes(), file.string());
}

}  // namespace fem::mesh
