// core/file_io.h: atomic writes through links and devices, output sets, input and same-file checks.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "embshard/core/file_io.h"
#include "test_util.h"

namespace embshard {
namespace {

namespace fs = std::filesystem;
using test_util::error_of;

class FileIo : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("embshard_file_io_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  /** Names in the test directory that contain ".tmp". */
  std::vector<std::string> temporaries() const {
    std::vector<std::string> found;
    for (const auto& e : fs::directory_iterator(dir_)) {
      if (e.path().filename().string().find(".tmp") != std::string::npos) found.push_back(e.path().string());
    }
    return found;
  }
  fs::path dir_;
};

TEST_F(FileIo, WriteFileAtomicReplacesAndLeavesNoTemporary) {
  write_file_atomic(path("a.json"), "one");
  write_file_atomic(path("a.json"), "two");
  EXPECT_EQ(read_file(path("a.json")), "two");
  write_file_atomic(path("sub/dir/b.json"), "deep");  // parents created
  EXPECT_EQ(read_file(path("sub/dir/b.json")), "deep");
  EXPECT_TRUE(temporaries().empty());
}

TEST_F(FileIo, AFileBiggerThanMemoryIsRefusedBeforeItIsRead) {
  // A sparse file of 1 TiB (2 GiB of leading whitespace once ended in std::bad_alloc).
  const std::string huge = path("huge.json");
  std::ofstream(huge).close();
  fs::resize_file(huge, std::uintmax_t{1} << 40);
  const std::string message = error_of([&] { (void)read_file(huge); });
  EXPECT_EQ(message.rfind(huge + ": reading the file needs about 1024 GiB of memory but ", 0), 0u) << message;
  EXPECT_NE(message.find(" GiB is available"), std::string::npos) << message;
}

TEST_F(FileIo, FullDiskLeavesTheOldFileAndNoTemporary) {
  write_file_atomic(path("a.json"), "old");
  std::string message;
  {
    const test_util::FileSizeLimit full_disk(4);
    message = error_of([&] { write_file_atomic(path("a.json"), "much more than four bytes"); });
  }
  EXPECT_NE(message.find(path("a.json") + ": write failed (File too large)"), std::string::npos) << message;
  EXPECT_EQ(read_file(path("a.json")), "old");
  EXPECT_TRUE(temporaries().empty());
}

TEST_F(FileIo, KeepsTheModeOfTheFileItReplaces) {
  write_file_atomic(path("a"), "x");
  ASSERT_EQ(::chmod(path("a").c_str(), 0640), 0);
  write_file_atomic(path("a"), "y");
  struct stat st {};
  ASSERT_EQ(::stat(path("a").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
}

TEST_F(FileIo, SymlinkTargetIsReplacedAndTheLinkStays) {
  write_file_atomic(path("real.json"), "old");
  fs::create_symlink("real.json", path("link.json"));
  write_file_atomic(path("link.json"), "new");
  EXPECT_TRUE(fs::is_symlink(path("link.json")));
  EXPECT_EQ(read_file(path("real.json")), "new");
  fs::create_symlink("missing.json", path("dangling.json"));  // a dangling link creates its target
  write_file_atomic(path("dangling.json"), "made");
  EXPECT_TRUE(fs::is_symlink(path("dangling.json")));
  EXPECT_EQ(read_file(path("missing.json")), "made");
}

TEST_F(FileIo, DevicesAreWrittenThroughNotReplaced) {
  write_file_atomic("/dev/null", "discarded");
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
  if (fs::exists("/dev/full")) {
    const std::string message = error_of([] { write_file_atomic("/dev/full", "x"); });
    EXPECT_NE(message.find("/dev/full: write failed (No space left on device)"), std::string::npos) << message;
    EXPECT_TRUE(fs::is_character_file("/dev/full"));
  }
}

TEST_F(FileIo, FifoIsWrittenThrough) {
  test_util::FifoReader reader(path("pipe"));
  write_file_atomic(path("pipe"), "through the pipe");
  EXPECT_EQ(reader.join(), "through the pipe");
  EXPECT_TRUE(fs::is_fifo(path("pipe")));
  EXPECT_TRUE(temporaries().empty());
}

TEST_F(FileIo, OutputSetCommitsAllOrNothing) {
  write_file_atomic(path("a.csv"), "old a");
  write_file_atomic(path("b.md"), "old b");
  fs::create_directories(path("c.svg"));  // the third output cannot be written
  OutputSet set;
  set.add(path("a.csv"), "new a");
  set.add(path("b.md"), "new b");
  set.add(path("c.svg"), "new c");
  const std::string message = error_of([&] { set.commit(); });
  EXPECT_NE(message.find("c.svg: is a directory"), std::string::npos) << message;
  EXPECT_EQ(read_file(path("a.csv")), "old a");
  EXPECT_EQ(read_file(path("b.md")), "old b");
  EXPECT_TRUE(temporaries().empty());
  OutputSet good;
  good.add(path("a.csv"), "new a");
  good.add(path("b.md"), "new b");
  good.commit();
  EXPECT_EQ(read_file(path("a.csv")), "new a");
  EXPECT_EQ(read_file(path("b.md")), "new b");
}

TEST_F(FileIo, FailedWriteThroughLeavesFileTargetsUntouched) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  write_file_atomic(path("a.csv"), "old a");
  OutputSet set;
  set.add(path("a.csv"), "new a");
  set.add("/dev/full", "x");
  EXPECT_NE(error_of([&] { set.commit(); }).find("/dev/full"), std::string::npos);
  EXPECT_EQ(read_file(path("a.csv")), "old a");
  EXPECT_TRUE(temporaries().empty());
}

TEST_F(FileIo, UncommittedOutputFileRemovesItsUniqueTemporary) {
  std::string first_temp;
  {
    OutputFile a(path("x.json"));
    OutputFile b(path("x.json"));  // concurrent writers of one path never share a temporary
    EXPECT_NE(a.write_path(), b.write_path());
    EXPECT_NE(a.write_path().find("x.json.tmp-" + std::to_string(::getpid()) + "-"), std::string::npos);
    a.write("partial");
    first_temp = a.write_path();
    EXPECT_TRUE(fs::exists(first_temp));
  }
  EXPECT_FALSE(fs::exists(first_temp));
  EXPECT_FALSE(fs::exists(path("x.json")));
}

TEST_F(FileIo, StaleTemporaryOfADeadProcessIsRemovedByTheNextWrite) {
  const std::string stale = path("x.json.tmp-2147483646-AbCdEf");  // no such pid
  const std::string live = path("x.json.tmp-" + std::to_string(::getpid()) + "-AbCdEf");
  write_file_atomic(stale, "left by a killed run");
  write_file_atomic(live, "someone writing now");
  write_file_atomic(path("x.json"), "done");
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_TRUE(fs::exists(live));
}

TEST_F(FileIo, InputProblemsAreNamedExactly) {
  write_file_atomic(path("ok"), "x");
  ASSERT_EQ(::mkfifo(path("pipe").c_str(), 0600), 0);
  EXPECT_EQ(find_input_file_problem(path("ok")), "");
  EXPECT_EQ(find_input_file_problem(path("missing")), "no such file");
  EXPECT_EQ(find_input_file_problem(dir_.string()), "is a directory");
  EXPECT_EQ(find_input_file_problem(path("pipe")), "is a FIFO, not a regular file");  // no hang
  EXPECT_EQ(find_input_file_problem("/dev/null"), "is a character device, not a regular file");
  EXPECT_EQ(error_of([&] { (void)read_file(dir_.string()); }), dir_.string() + ": is a directory");
  EXPECT_EQ(error_of([&] { check_input_file(path("missing"), "--data"); }),
            "--data: " + path("missing") + ": no such file");
}

TEST_F(FileIo, SameFileUnderAnyNameIsRefused) {
  write_file_atomic(path("in.json"), "input");
  fs::create_hard_link(path("in.json"), path("hard.json"));
  fs::create_symlink("in.json", path("sym.json"));
  const std::vector<NamedPath> inputs = {{"--task", path("in.json")}};
  for (const std::string& alias : {path("in.json"), (dir_ / "." / "in.json").string(), path("hard.json"),
                                   path("sym.json"), (dir_ / "sub" / ".." / "in.json").string()}) {
    const std::string message = error_of([&] { refuse_if_same_file(inputs, {{"--out", alias}}); });
    EXPECT_NE(message.find("--out " + alias + " is the same file as --task " + path("in.json") +
                           "; refusing to overwrite an input"),
              std::string::npos)
        << message;
  }
  // Two outputs that do not exist yet, one name through "./".
  EXPECT_NE(error_of([&] {
              refuse_if_same_file({}, {{"--out", path("new.csv")}, {"--summary", (dir_ / "." / "new.csv").string()}});
            }).find("give each output its own path"),
            std::string::npos);
  // A directory input stands for its files.
  EXPECT_NE(error_of([&] {
              refuse_if_same_file({{"--tasks", dir_.string()}}, {{"--out", path("in.json")}});
            }).find("is the same file as --tasks"),
            std::string::npos);
  // Distinct files, stdout and devices pass.
  refuse_if_same_file(inputs, {{"--out", path("other.json")},
                               {"--summary", "-"},
                               {"--chart", "-"},
                               {"--a", "/dev/null"},
                               {"--b", "/dev/null"},
                               {"--c", ""}});
}

TEST_F(FileIo, ResourceChecksNameWhatAndTheEstimate) {
  EXPECT_GT(available_memory_bytes(), 0u);
  EXPECT_GT(available_disk_bytes(path("not/yet/there.bin")), 0u);
  check_fits_in_memory(1, "one byte");
  check_fits_on_disk(path("x"), 1, "one byte");
  const std::string memory = error_of([] { check_fits_in_memory(UINT64_MAX / 2, "--batch 2^60"); });
  EXPECT_NE(memory.find("--batch 2^60 needs about"), std::string::npos) << memory;
  EXPECT_NE(memory.find("GiB of memory but"), std::string::npos) << memory;
  const std::string disk = error_of([&] { check_fits_on_disk(path("x"), UINT64_MAX / 2, "--count 1e9"); });
  EXPECT_NE(disk.find("--count 1e9 needs about"), std::string::npos) << disk;
  EXPECT_NE(disk.find("GiB on disk at " + path("x")), std::string::npos) << disk;
}

}  // namespace
}  // namespace embshard
