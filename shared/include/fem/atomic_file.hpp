// Files written all or nothing: the content goes to a temporary file in the target's folder and is
// renamed over the target only once it is complete, so a run that fails midway (disk full, an
// error, killed) leaves the previous file intact and no truncated one. Every writer of results
// (VTU, PVD, Gmsh, the drivers' JSON) writes through it.
//
//   fem::AtomicFile f("out/u.vtu");     // opens out/.u.vtu.<pid>.<n>.tmp
//   f.stream() << ...;
//   f.commit();                          // complete: renamed to out/u.vtu; else the temp file goes
//
// What it does not do: fsync. A crash of the process or a full disk cannot leave a partial file;
// a power loss before the operating system wrote its cache back can (the price of fsync on every
// result file was judged too high for a simulation's output).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <ostream>
#include <string_view>

namespace fem {

class AtomicFile {
 public:
  /// Opens a temporary file next to `target`. Throws fem::Error naming the target when its
  /// folder does not exist, is not a folder (a path through a regular file), or is not writable.
  explicit AtomicFile(std::filesystem::path target);
  /// Without commit(), the temporary file is removed and the target is untouched.
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  std::ostream& stream();
  void write(std::string_view bytes) { stream().write(bytes.data(), static_cast<std::streamsize>(bytes.size())); }
  /// Flushes, closes and renames the temporary file over the target. Throws fem::Error naming
  /// the target and the system's reason ("No space left on device") when any write failed; the
  /// target is then untouched.
  void commit();

  const std::filesystem::path& target() const noexcept { return target_; }

 private:
  struct Impl;
  std::filesystem::path target_;
  std::unique_ptr<Impl> impl_;
};

/// Write `bytes` to `target` through an AtomicFile.
void write_file_atomically(const std::filesystem::path& target, std::string_view bytes);

/// Checks that a file could be written at `target` (its folder exists, is a folder and is
/// writable) without touching the target: fem::Error in words otherwise. For checking an output
/// path before a long computation.
void check_writable(const std::filesystem::path& target);

namespace detail {
/// Tests only: every AtomicFile write fails with ENOSPC once `bytes` bytes were written in
/// total by this process (negative: never, the default).
void fail_writes_after(std::int64_t bytes);
}  // namespace detail

}  // namespace fem
