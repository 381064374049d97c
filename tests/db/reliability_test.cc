// Reliability of the database file under concurrent processes, crashes and bad files.
// Multi-process tests fork(); children never return into GoogleTest (they _exit()).
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

#include "core/error.h"
#include "db/efficiency_db.h"
#include "db_test_util.h"

namespace calisim::db {
namespace {

using testing::gemm_rows;
using testing::run_with;
using testing::test_device;

class ReliabilityTest : public testing::ScratchDir {
 protected:
  void SetUp() override {
    ScratchDir::SetUp();
    auto db = EfficiencyDb::open(path("r.db"), OpenMode::create);
    db.put_device(test_device());
  }
};

// Runs `body` in a child process; the child exits 0 when body returns, 1 when it throws.
template <class F>
pid_t spawn(F body) {
  const pid_t pid = fork();
  if (pid == 0) {
    int rc = 0;
    try {
      body();
    } catch (...) {
      rc = 1;
    }
    _exit(rc);
  }
  return pid;
}

TEST_F(ReliabilityTest, ReaderSeesOnlyWholeBatchesWhileAWriterInserts) {
  constexpr int kBatches = 30, kRows = 200;
  const pid_t writer = spawn([&] {
    auto db = EfficiencyDb::open(path("r.db"), OpenMode::read_write);
    for (int i = 0; i < kBatches; ++i) {
      db.insert_run(run_with("Test GPU", Source::measured, "w", std::to_string(i), gemm_rows(kRows, 64 + i * kRows)));
    }
  });
  auto reader = EfficiencyDb::open(path("r.db"), OpenMode::read_only);
  int reads = 0;
  int status = 0;
  for (;;) {
    const bool writer_done = waitpid(writer, &status, WNOHANG) != 0;
    // One read transaction: the runs and their rows come from one snapshot.
    reader.connection().exec("BEGIN");
    const auto runs = reader.load_runs("Test GPU");
    reader.connection().exec("COMMIT");
    for (const auto& r : runs) ASSERT_EQ(r.rows.gemm.size(), static_cast<std::size_t>(kRows)) << "partial batch seen";
    ++reads;
    if (writer_done) {
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "writer failed";
      EXPECT_EQ(runs.size(), static_cast<std::size_t>(kBatches));
      break;
    }
  }
  EXPECT_GE(reads, 1);
}

TEST_F(ReliabilityTest, KillDashNineMidBatchKeepsEveryCommittedRow) {
  int pipefd[2];
  ASSERT_EQ(pipe(pipefd), 0);
  const pid_t child = spawn([&] {
    close(pipefd[0]);
    auto db = EfficiencyDb::open(path("r.db"), OpenMode::read_write);
    for (int i = 0; i < 3; ++i) {
      db.insert_run(run_with("Test GPU", Source::measured, "c", std::to_string(i), gemm_rows(100, 64 + 100 * i)));
    }
    db.insert_run(run_with("Test GPU", Source::measured, "c", "big", gemm_rows(5000, 10000)),
                  [&](std::size_t, std::size_t) {
                    // Mid-batch: tell the parent, then wait to be killed.
                    const char c = 'B';
                    if (write(pipefd[1], &c, 1) != 1) _exit(3);
                    for (;;) pause();
                  });
  });
  close(pipefd[1]);
  char c = 0;
  ASSERT_EQ(read(pipefd[0], &c, 1), 1);
  close(pipefd[0]);
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));

  auto db = EfficiencyDb::open(path("r.db"), OpenMode::read_write);
  Statement check(db.connection(), "PRAGMA integrity_check");
  ASSERT_TRUE(check.step());
  EXPECT_EQ(check.text(0), "ok");
  const DeviceSummary s = db.summary("Test GPU");
  EXPECT_EQ(s.runs, 3);
  EXPECT_EQ(s.gemm, 300);
  db.insert_run(run_with("Test GPU", Source::measured, "after", "t", gemm_rows(10)));  // still writable
  EXPECT_EQ(db.summary("Test GPU").gemm, 310);
}

TEST_F(ReliabilityTest, CorruptFileIsAClearError) {
  {
    auto db = EfficiencyDb::open(path("r.db"), OpenMode::read_write);
    db.insert_run(run_with("Test GPU", Source::measured, "h", "t", gemm_rows(2000)));
    db.vacuum();
  }
  {
    std::fstream f(path("r.db"), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(4096 * 3);
    const std::string garbage(4096 * 4, '\x5a');
    f.write(garbage.data(), static_cast<std::streamsize>(garbage.size()));
  }
  try {
    auto db = EfficiencyDb::open(path("r.db"), OpenMode::read_only);
    db.load_runs();
    FAIL() << "corruption not detected";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(path("r.db")), std::string::npos) << e.what();
  }
}

TEST_F(ReliabilityTest, NonSqliteFileIsAClearError) {
  std::ofstream(path("x.db")) << "device,key\nthis is a CSV file, not a database\n";
  for (OpenMode mode : {OpenMode::read_only, OpenMode::read_write}) {
    try {
      EfficiencyDb::open(path("x.db"), mode);
      FAIL();
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("not an SQLite database"), std::string::npos) << e.what();
    }
  }
}

TEST_F(ReliabilityTest, ReadOnlyModeRefusesWritesClearly) {
  auto ro = EfficiencyDb::open(path("r.db"), OpenMode::read_only);
  try {
    ro.put_device(test_device("New"));
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("read-only"), std::string::npos) << e.what();
  }
}

TEST_F(ReliabilityTest, ReadOnlyFileRefusesWritesClearly) {
  if (geteuid() == 0) GTEST_SKIP() << "file permissions do not bind root";
  chmod(path("r.db").c_str(), 0444);
  EXPECT_THROW(
      {
        auto db = EfficiencyDb::open(path("r.db"), OpenMode::read_write);
        db.put_device(test_device("New"));
      },
      InputError);
}

TEST_F(ReliabilityTest, MissingDirectoryOrFileIsAClearError) {
  try {
    EfficiencyDb::open(path("no/such/dir/e.db"), OpenMode::create);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("does not exist"), std::string::npos) << e.what();
  }
  EXPECT_THROW(EfficiencyDb::open(path("absent.db"), OpenMode::read_only), InputError);
}

}  // namespace
}  // namespace calisim::db
