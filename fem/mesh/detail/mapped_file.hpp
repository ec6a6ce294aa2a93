// A read-only memory map of a whole file (the readers parse it in place, no copy); an empty
// file maps to an empty view. Failure to open or map is a fem::ParseError naming the file.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string_view>

namespace fem::mesh::detail {

class MappedFile {
 public:
  explicit MappedFile(const std::filesystem::path& file);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::string_view bytes() const noexcept { return {static_cast<const char*>(data_), size_}; }

 private:
  void* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace fem::mesh::detail
