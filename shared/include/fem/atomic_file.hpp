// Files written all or nothing: the content goes to a temporary file in the target's folder and is
// renamed over the target only once it is complete, so a run that fails midway (disk full, an
// error, killed) leaves the previous file intact and no truncated one. Every writer of results
// (VTU, PVD, Gmsh, the drivers' JSON) writes through it.
//
//   fem::AtomicFile f("out/u.vtu");     // opens out/.u.vtu.<pid>.<16 hex digits>.tmp
//   f.stream() << ...;
//   f.commit();                          // complete: renamed to out/u.vtu; else the temp file goes
//
// Targets that are not plain files:
//   - a symbolic link (a chain of them) is followed: the temporary file is made next to the file
//     it leads to and renamed over that file, so the link stays and shows the new content; a link
//     to a file that does not exist yet makes that file;
//   - an existing FIFO, character or block device, or a path that names one of this process'
//     descriptors (--json /dev/stdout, /dev/fd/N: written through a duplicate of the descriptor,
//     where it stands), or anything under /proc or /sys, is written in place: no temporary file,
//     no rename (atomicity is not possible there); a failure midway leaves what was written.
// The temporary file is created only where nothing is (O_CREAT | O_EXCL | O_NOFOLLOW), with a
// random name, mode 0600 while it is written: a link planted at its name in a shared folder such
// as /tmp cannot redirect the write (the next name is tried, 16 in all). On commit it gets the
// replaced file's permissions (and owner, where allowed), or those a new file would get (0666
// less the umask).
//
// A process killed before commit or destruction (SIGKILL, a crash, a power loss) leaves its
// temporary file behind: a hidden `.<name>.<pid>.<16 hex digits>.tmp` next to the target (next to
// what its link leads to). Nothing ever reads one back, and it is safe to delete once the process
// named by <pid> is gone.
//
// What it does not do: fsync. A crash of the process or a full disk cannot leave a partial file;
// a power loss before the operating system wrote its cache back can (the price of fsync on every
// result file was judged too high for a simulation's output). Nor does it keep a replaced file's
// ACLs or extended attributes, or its hard links (the name gets a new file; other names keep the
// old one).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <ostream>
#include <string_view>

namespace fem {

class AtomicFile {
 public:
  /// Opens a temporary file next to `target` (next to what its links lead to), or opens the target
  /// itself when it is a FIFO, a device or a descriptor (see above). Throws fem::Error naming the
  /// target when its folder does not exist, is not a folder (a path through a regular file), or
  /// is not writable, or when the target is a folder.
  explicit AtomicFile(std::filesystem::path target);
  /// Without commit(), the temporary file is removed and the target is untouched (written in
  /// place: what was already flushed to it stays).
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  std::ostream& stream();
  void write(std::string_view bytes) {
    stream().write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
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

/// Several files that are one output (a time series: its frames and the .pvd naming them),
/// published together or not at all. They are written into a private folder inside `folder`
/// (hidden, named like AtomicFile's temporary files: .<name>.<pid>.<16 hex digits>.tmp, mode
/// 0700); commit() moves them into `folder`, each replacing a file of the same name, and then
/// commits `last` (the index naming them). A failure there (a move or `last` refused) moves the
/// new files back out and restores the replaced ones before the error is thrown; without commit()
/// (an error midway, an exception) the private folder and everything in it is removed. Either
/// way, `folder` is left as it was. A crash leaves the hidden folder behind (safe to delete once
/// the process named by <pid> is gone), and a crash during commit() (a few renames) can leave
/// some new files beside the previous index.
///
///   fem::StagedFiles frames("out", "heat.pvd");
///   fem::mesh::write_vtu(frames.path() / "heat_000000.vtu", ...);   // ... every frame
///   fem::AtomicFile pvd("out/heat.pvd");  pvd.stream() << ...;
///   frames.commit(&pvd);                  // out/heat_000000.vtu ... and out/heat.pvd
class StagedFiles {
 public:
  /// Creates the private folder: fem::Error in words when `folder` cannot hold it.
  StagedFiles(const std::filesystem::path& folder, std::string_view name);
  ~StagedFiles();
  StagedFiles(const StagedFiles&) = delete;
  StagedFiles& operator=(const StagedFiles&) = delete;

  /// The private folder: write the files here (plain files, no subfolders).
  const std::filesystem::path& path() const noexcept { return staging_; }
  /// Moves every file of the private folder (sorted by name; hidden ones, such as a writer's
  /// left-over temporary file, are dropped) into the folder, then commits `last` when given.
  /// Once only; the private folder is gone afterwards.
  void commit(AtomicFile* last = nullptr);

 private:
  std::filesystem::path folder_, staging_;
  bool done_ = false;
};

/// Checks that a file could be written at `target` (its folder, or the folder of what its links
/// lead to, exists, is a folder and is writable; a FIFO, device or descriptor is writable itself)
/// without touching the target: fem::Error in words otherwise. For checking an output path
/// before a long computation.
void check_writable(const std::filesystem::path& target);

namespace detail {
/// Tests only: every AtomicFile write fails with ENOSPC once `bytes` bytes were written in
/// total by this process (negative: never, the default).
void fail_writes_after(std::int64_t bytes);
/// Tests only: temporary files are named with tokens first, first + 1, ... instead of random
/// ones, so that a test can plant files at those names (negative: random, the default).
void temp_name_tokens_from(std::int64_t first);
}  // namespace detail

}  // namespace fem
