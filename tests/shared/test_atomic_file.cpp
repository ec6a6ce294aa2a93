// fem::AtomicFile on targets that are not plain files in a private folder: a symbolic link (kept,
// its file replaced), a FIFO, a character device and a link to an open file descriptor like
// /dev/stdout (written directly, no temporary file, no rename), an existing file with its own
// permissions (kept), a new file (0666 less the umask), and a folder where someone planted a
// symbolic link at the temporary file's name (never followed).
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "fem/atomic_file.hpp"
#include "fem/error.hpp"

namespace {

namespace fs = std::filesystem;

// A fresh folder for one test, removed after it.
class TempFolder {
 public:
  TempFolder() {
    std::string pattern = (fs::temp_directory_path() / "fem_atomic_file_XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempFolder() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempFolder(const TempFolder&) = delete;
  TempFolder& operator=(const TempFolder&) = delete;
  fs::path operator/(const std::string& name) const { return path_ / name; }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_plain(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }

// The names in a folder that look like AtomicFile's temporary files (".<name>.<pid>.<token>.tmp").
std::vector<std::string> temp_files(const fs::path& folder) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(folder)) {
    const std::string n = e.path().filename().string();
    if (n.size() > 4 && n.front() == '.' && n.ends_with(".tmp")) out.push_back(n);
  }
  return out;
}

unsigned mode_of(const fs::path& p) {
  struct stat st {};
  EXPECT_EQ(::stat(p.c_str(), &st), 0) << p;
  return st.st_mode & 07777;
}

// The process umask set for one scope, restored after.
class ScopedUmask {
 public:
  explicit ScopedUmask(mode_t mask) : old_(::umask(mask)) {}
  ~ScopedUmask() { ::umask(old_); }
  ScopedUmask(const ScopedUmask&) = delete;
  ScopedUmask& operator=(const ScopedUmask&) = delete;

 private:
  mode_t old_;
};

// Temporary file names made predictable for one scope (tests only).
class PredictableTempNames {
 public:
  explicit PredictableTempNames(std::int64_t first) { fem::detail::temp_name_tokens_from(first); }
  ~PredictableTempNames() { fem::detail::temp_name_tokens_from(-1); }
  PredictableTempNames(const PredictableTempNames&) = delete;
  PredictableTempNames& operator=(const PredictableTempNames&) = delete;
};

TEST(AtomicFile, PlainFileIsReplacedAndNoTemporaryFileIsLeft) {
  TempFolder dir;
  write_plain(dir / "out.txt", "old");
  fem::write_file_atomically(dir / "out.txt", "new");
  EXPECT_EQ(read(dir / "out.txt"), "new");
  EXPECT_TRUE(temp_files(dir.path()).empty());
  {
    fem::AtomicFile f(dir / "out.txt");
    f.stream() << "never committed";
  }
  EXPECT_EQ(read(dir / "out.txt"), "new");
  EXPECT_TRUE(temp_files(dir.path()).empty());
}

// `--json link.json` where link.json -> data/real.json (and a chain of two links): the links stay
// links, the file they point to gets the new content, the temporary file was made next to it.
TEST(AtomicFile, SymlinkTargetIsKeptAndTheFileItPointsToIsUpdated) {
  TempFolder dir;
  fs::create_directory(dir / "data");
  write_plain(dir / "data/real.json", "old");
  fs::create_symlink("data/real.json", dir / "link.json");    // relative to the link's folder
  fs::create_symlink(dir / "link.json", dir / "link2.json");  // absolute, to a link
  fem::write_file_atomically(dir / "link.json", "new");
  ASSERT_TRUE(fs::is_symlink(dir / "link.json"));
  EXPECT_EQ(fs::read_symlink(dir / "link.json"), "data/real.json");
  EXPECT_EQ(read(dir / "data/real.json"), "new");
  fem::write_file_atomically(dir / "link2.json", "newer");
  ASSERT_TRUE(fs::is_symlink(dir / "link2.json"));
  ASSERT_TRUE(fs::is_symlink(dir / "link.json"));
  EXPECT_EQ(read(dir / "data/real.json"), "newer");
  EXPECT_TRUE(temp_files(dir.path()).empty());
  EXPECT_TRUE(temp_files(dir / "data").empty());
  // A link to a file that does not exist yet: the file is made where the link points.
  fs::create_symlink("data/later.json", dir / "dangling.json");
  fem::write_file_atomically(dir / "dangling.json", "made");
  ASSERT_TRUE(fs::is_symlink(dir / "dangling.json"));
  EXPECT_EQ(read(dir / "data/later.json"), "made");
  // A link into a folder that does not exist is an error naming the target.
  fs::create_symlink("nowhere/x.json", dir / "lost.json");
  try {
    fem::write_file_atomically(dir / "lost.json", "x");
    ADD_FAILURE() << "wrote through a link into a missing folder";
  } catch (const fem::Error& e) {
    EXPECT_NE(std::string(e.what()).find("lost.json"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("does not exist"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(fs::is_symlink(dir / "lost.json"));
}

// A FIFO (like `--json /dev/stdout` on a pipe) is opened and written as it is: no temporary file,
// no rename over it. More than a pipe's buffer, read by another thread.
TEST(AtomicFile, FifoTargetIsWrittenDirectly) {
  TempFolder dir;
  const fs::path fifo = dir / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // A second name for the FIFO, to let the reader go if the writer never opens it.
  ASSERT_EQ(::link(fifo.c_str(), (dir / "pipe.keep").c_str()), 0);
  const std::string text(1 << 20, 'x');
  std::string got;
  std::thread reader([&] {
    const int fd = ::open(fifo.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    char buf[65536];
    for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) != 0;) {
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) break;
      got.append(buf, static_cast<std::size_t>(n));
    }
    ::close(fd);
  });
  try {
    fem::write_file_atomically(fifo, text);
  } catch (const fem::Error& e) {
    ADD_FAILURE() << e.what();
  }
  // Unblocks a reader still waiting for a writer (fails harmlessly when there is none).
  const int release = ::open((dir / "pipe.keep").c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
  if (release >= 0) ::close(release);
  reader.join();
  EXPECT_TRUE(fs::is_fifo(fifo)) << "the FIFO was replaced";
  EXPECT_EQ(got.size(), text.size());
  EXPECT_TRUE(got == text);
  EXPECT_TRUE(temp_files(dir.path()).empty());
}

// A character device is written directly, never replaced. As root (who could rename over a node
// in /dev), a private null device made in the test's folder; otherwise /dev/null itself, which a
// user who may not write into /dev must still be able to write.
TEST(AtomicFile, CharacterDeviceTargetIsWrittenDirectly) {
  TempFolder dir;
  fs::path device = "/dev/null";
  if (::geteuid() == 0) {
    device = dir / "null";
    ASSERT_EQ(::mknod(device.c_str(), S_IFCHR | 0666, makedev(1, 3)), 0) << std::strerror(errno);
  }
  struct stat before {};
  ASSERT_EQ(::stat(device.c_str(), &before), 0);
  ASSERT_TRUE(S_ISCHR(before.st_mode));
  EXPECT_NO_THROW(fem::check_writable(device));
  fem::write_file_atomically(device, "discarded");
  struct stat after {};
  ASSERT_EQ(::stat(device.c_str(), &after), 0);
  EXPECT_TRUE(S_ISCHR(after.st_mode));
  EXPECT_EQ(after.st_rdev, before.st_rdev);
  EXPECT_EQ(after.st_ino, before.st_ino);
  EXPECT_TRUE(temp_files(dir.path()).empty());
}

// `--json /dev/stdout`: /dev/stdout is a link to /proc/self/fd/1, which names one of this
// process' open descriptors. Such a target is written through that descriptor: into a pipe as it
// is, into a regular file (a shell's `> log`) where it stands, after what the process wrote there
// before, neither replaced nor truncated; a descriptor open only for reading is an error. Tested
// through a private link of the same shape (never through /dev/stdout: as root a faulty version
// would replace the system's link) and through /dev/fd/N.
TEST(AtomicFile, LinkToAnOpenFileDescriptorIsWrittenDirectly) {
  TempFolder dir;
  int p[2];
  ASSERT_EQ(::pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
  const fs::path link = dir / "stdout";
  fs::create_symlink(fmt::format("/proc/self/fd/{}", p[1]), link);
  EXPECT_NO_THROW(fem::check_writable(link));
  fem::write_file_atomically(link, "to the pipe;");
  fem::write_file_atomically(fmt::format("/dev/fd/{}", p[1]), " again");
  char buf[256];
  const ssize_t n = ::read(p[0], buf, sizeof buf);
  EXPECT_EQ(std::string(buf, n > 0 ? static_cast<std::size_t>(n) : 0), "to the pipe; again");
  EXPECT_TRUE(fs::is_symlink(link));
  ::close(p[0]);
  ::close(p[1]);

  const fs::path log = dir / "log";
  const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, "printed\n", 8), 8);
  struct stat before {};
  ASSERT_EQ(::stat(log.c_str(), &before), 0);
  const fs::path to_log = dir / "stdout_to_log";
  fs::create_symlink(fmt::format("/proc/self/fd/{}", fd), to_log);
  fem::write_file_atomically(to_log, "{\"json\": 1}\n");
  ::close(fd);
  EXPECT_EQ(read(log), "printed\n{\"json\": 1}\n");
  struct stat after {};
  ASSERT_EQ(::stat(log.c_str(), &after), 0);
  EXPECT_EQ(after.st_ino, before.st_ino) << "the file was replaced";
  EXPECT_TRUE(fs::is_symlink(to_log));

  const int reading = ::open(log.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(reading, 0);
  const std::string read_only = fmt::format("/dev/fd/{}", reading);
  EXPECT_THROW(fem::check_writable(read_only), fem::Error);
  EXPECT_THROW(fem::write_file_atomically(read_only, "x"), fem::Error);
  ::close(reading);
  EXPECT_EQ(read(log), "printed\n{\"json\": 1}\n");
  EXPECT_TRUE(temp_files(dir.path()).empty());
}

TEST(AtomicFile, ExistingFileKeepsItsPermissions) {
  TempFolder dir;
  for (unsigned mode : {0640u, 0600u, 0755u, 0444u}) {
    SCOPED_TRACE(mode);
    const fs::path p = dir / "kept.txt";
    fs::remove(p);
    write_plain(p, "old");
    ASSERT_EQ(::chmod(p.c_str(), mode), 0);
    fem::write_file_atomically(p, "new");
    EXPECT_EQ(read(p), "new");
    EXPECT_EQ(mode_of(p), mode);
  }
}

TEST(AtomicFile, NewFileGetsTheUmaskPermissions) {
  TempFolder dir;
  for (mode_t mask : {022u, 027u, 077u, 002u}) {
    SCOPED_TRACE(mask);
    const fs::path p = dir / ("new" + std::to_string(mask) + ".txt");
    {
      ScopedUmask scoped(mask);
      fem::write_file_atomically(p, "new");
    }
    EXPECT_EQ(mode_of(p), 0666u & ~static_cast<unsigned>(mask));
  }
}

// Someone who can write into a shared folder (/tmp) plants a symbolic link at the name the
// temporary file will have, pointing at a file of the victim's. The write must not follow it
// (O_EXCL | O_NOFOLLOW), must leave the planted link alone, and must go to the target under
// another name. Names are made predictable through the tests-only hook; planted regular files
// at the next names are skipped the same way.
TEST(AtomicFile, PlantedSymlinkAtTheTemporaryNameIsNotFollowed) {
  TempFolder dir;
  write_plain(dir / "victim", "precious");
  const std::int64_t first = 0x5eed0000;
  const auto temp_name = [&](std::int64_t token) {
    return dir / fmt::format(".out.json.{}.{:016x}.tmp", ::getpid(), static_cast<std::uint64_t>(token));
  };
  fs::create_symlink(dir / "victim", temp_name(first));
  fs::create_symlink(dir / "absent", temp_name(first + 1));  // dangling: O_CREAT would make it
  write_plain(temp_name(first + 2), "someone else's");
  {
    PredictableTempNames names(first);
    fem::write_file_atomically(dir / "out.json", "{}");
  }
  EXPECT_EQ(read(dir / "out.json"), "{}");
  EXPECT_EQ(read(dir / "victim"), "precious");
  EXPECT_FALSE(fs::exists(dir / "absent"));
  EXPECT_TRUE(fs::is_symlink(temp_name(first)));
  EXPECT_TRUE(fs::is_symlink(temp_name(first + 1)));
  EXPECT_EQ(read(temp_name(first + 2)), "someone else's");
  EXPECT_EQ(temp_files(dir.path()).size(), 3u);  // the three planted ones, nothing of ours
}

// Every name it would try taken: an error in words, nothing written anywhere.
TEST(AtomicFile, EveryTemporaryNameTakenIsAnError) {
  TempFolder dir;
  const std::int64_t first = 0x7a4e0000;
  for (std::int64_t k = 0; k < 64; ++k)
    write_plain(
        dir / fmt::format(".out.json.{}.{:016x}.tmp", ::getpid(), static_cast<std::uint64_t>(first + k)),
        "taken");
  PredictableTempNames names(first);
  try {
    fem::write_file_atomically(dir / "out.json", "{}");
    ADD_FAILURE() << "wrote although every temporary name was taken";
  } catch (const fem::Error& e) {
    EXPECT_NE(std::string(e.what()).find("out.json"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("File exists"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(dir / "out.json"));
}

TEST(AtomicFile, WriteFailureLeavesThePreviousFileAndNoTemporary) {
  TempFolder dir;
  write_plain(dir / "out.txt", "previous");
  fem::detail::fail_writes_after(10);
  try {
    fem::AtomicFile f(dir / "out.txt");
    f.write(std::string(1 << 17, 'y'));
    f.commit();
    ADD_FAILURE() << "commit succeeded";
  } catch (const fem::Error& e) {
    EXPECT_NE(std::string(e.what()).find("out.txt"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("No space left on device"), std::string::npos) << e.what();
  }
  fem::detail::fail_writes_after(-1);
  EXPECT_EQ(read(dir / "out.txt"), "previous");
  EXPECT_TRUE(temp_files(dir.path()).empty());
}

// Several files published together (fem::StagedFiles): written in a hidden private folder,
// moved in with the index last; a move that fails puts back every file it replaced and removes
// the new ones; a set given up (destroyed without commit) leaves nothing.
TEST(StagedFiles, PublishedTogetherOrNotAtAll) {
  const TempFolder dir;
  write_plain(dir / "a.vtu", "old a");
  write_plain(dir / "b.vtu", "old b");
  write_plain(dir / "s.pvd", "old index");
  const auto listing = [&] {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir.path())) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  };
  const auto before = listing();
  {  // given up
    fem::StagedFiles files(dir.path(), "s.pvd");
    EXPECT_EQ(files.path().parent_path(), dir.path());
    EXPECT_EQ(files.path().filename().string().front(), '.');
    write_plain(files.path() / "a.vtu", "new a");
  }
  EXPECT_EQ(listing(), before);
  {  // "c.vtu" cannot be moved in (a folder with a file there): everything back as it was
    fs::create_directories(dir / "c.vtu" / "inside");
    fem::StagedFiles files(dir.path(), "s.pvd");
    for (const char* name : {"a.vtu", "b.vtu", "c.vtu"}) write_plain(files.path() / name, "new");
    fem::AtomicFile index(dir / "s.pvd");
    index.write("new index");
    EXPECT_THROW(files.commit(&index), fem::Error);
    fs::remove_all(dir / "c.vtu");
  }
  EXPECT_EQ(listing(), before);
  EXPECT_EQ(read(dir / "a.vtu"), "old a");
  EXPECT_EQ(read(dir / "b.vtu"), "old b");
  EXPECT_EQ(read(dir / "s.pvd"), "old index");
  {  // committed: the new files and the index, the private folder gone
    fem::StagedFiles files(dir.path(), "s.pvd");
    for (const char* name : {"a.vtu", "c.vtu"}) write_plain(files.path() / name, std::string("new ") + name);
    fem::AtomicFile index(dir / "s.pvd");
    index.write("new index");
    files.commit(&index);
  }
  EXPECT_EQ(listing(), (std::vector<std::string>{"a.vtu", "b.vtu", "c.vtu", "s.pvd"}));
  EXPECT_EQ(read(dir / "a.vtu"), "new a.vtu");
  EXPECT_EQ(read(dir / "b.vtu"), "old b");  // not part of the new set
  EXPECT_EQ(read(dir / "c.vtu"), "new c.vtu");
  EXPECT_EQ(read(dir / "s.pvd"), "new index");
}

}  // namespace
