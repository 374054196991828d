// The user's job index, and finding a job by its id from any directory: runs/ first, then the
// index; a directory that is there but not this user's to read is refused as such.
#include "launcher/jobdir/job_index.h"

#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "launcher/jobdir/job_directory.h"
#include "launcher/jobdir/job_record.h"
#include "tests/testing/test_files.h"

namespace dlaunch {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

// Points XDG_STATE_HOME at a scratch folder for the test, and runs it from another directory
// than the one that holds the jobs.
class JobIndexTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* old = std::getenv("XDG_STATE_HOME");
    if (old != nullptr) old_state_ = old;
    ::setenv("XDG_STATE_HOME", (tmp_.path() + "/state").c_str(), 1);
    old_cwd_ = fs::current_path();
    fs::create_directories(tmp_.path() + "/elsewhere");
    fs::current_path(tmp_.path() + "/elsewhere");
  }
  void TearDown() override {
    fs::current_path(old_cwd_);
    if (old_state_) {
      ::setenv("XDG_STATE_HOME", old_state_->c_str(), 1);
    } else {
      ::unsetenv("XDG_STATE_HOME");
    }
  }
  std::string index_root() const { return tmp_.path() + "/state/dlaunch/jobs"; }

  ScratchDir tmp_;
  std::optional<std::string> old_state_;
  fs::path old_cwd_;
};

TEST_F(JobIndexTest, DefaultRootIsUnderXdgStateHomeElseHome) {
  EXPECT_EQ(JobIndex::DefaultRoot(), index_root());
  const char* home = std::getenv("HOME");
  const std::string saved_home = home ? home : "";
  ::setenv("XDG_STATE_HOME", "relative/state", 1);  // ignored, as XDG says
  ::setenv("HOME", "/home/u", 1);
  EXPECT_EQ(JobIndex::DefaultRoot(), "/home/u/.local/state/dlaunch/jobs");
  ::unsetenv("XDG_STATE_HOME");
  ::unsetenv("HOME");
  EXPECT_EQ(JobIndex::DefaultRoot(), "");
  EXPECT_THAT(JobIndex("").Record("j", "/tmp").message(),
              HasSubstr("neither XDG_STATE_HOME nor HOME"));
  if (home) ::setenv("HOME", saved_home.c_str(), 1);
}

TEST_F(JobIndexTest, CreatingAJobDirectoryRecordsItForTheUserAlone) {
  auto dir = JobDirectory::Create(tmp_.path() + "/proj/runs/train-1");
  ASSERT_TRUE(dir.ok()) << dir.status();
  EXPECT_EQ(ReadFile(index_root() + "/train-1"), tmp_.path() + "/proj/runs/train-1\n");
  struct stat st;
  ASSERT_EQ(::stat(index_root().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_EQ(::stat((index_root() + "/train-1").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST_F(JobIndexTest, AJobIdWorksFromAnotherDirectory) {
  ASSERT_TRUE(JobDirectory::Create(tmp_.path() + "/proj/runs/train-1").ok());
  WriteFile(tmp_.path() + "/proj/runs/train-1/job.yaml", "name: train\n");
  // The current directory has no runs/ at all.
  absl::StatusOr<std::string> dir = ResolveJobDir("train-1", "runs");
  ASSERT_TRUE(dir.ok()) << dir.status();
  EXPECT_EQ(*dir, tmp_.path() + "/proj/runs/train-1");
}

TEST_F(JobIndexTest, TheCurrentDirectorysRunsComeFirst) {
  ASSERT_TRUE(JobDirectory::Create(tmp_.path() + "/proj/runs/train-1").ok());
  WriteFile(tmp_.path() + "/proj/runs/train-1/job.yaml", "name: train\n");
  fs::create_directories("runs/train-1");
  WriteFile("runs/train-1/job.yaml", "name: here\n");
  absl::StatusOr<std::string> dir = ResolveJobDir("train-1", "runs");
  ASSERT_TRUE(dir.ok()) << dir.status();
  EXPECT_EQ(*dir, tmp_.path() + "/elsewhere/runs/train-1");
}

TEST_F(JobIndexTest, AStaleEntryIsSkipped) {
  const JobIndex index(index_root());
  ASSERT_TRUE(index.Record("gone-1", tmp_.path() + "/proj/runs/gone-1").ok());
  ASSERT_TRUE(JobDirectory::Create(tmp_.path() + "/proj/runs/kept-1").ok());
  EXPECT_TRUE(absl::IsNotFound(index.Find("gone-1").status()));
  EXPECT_THAT(index.List(), UnorderedElementsAre(tmp_.path() + "/proj/runs/kept-1"));
  absl::StatusOr<std::string> dir = ResolveJobDir("gone-1", "runs");
  ASSERT_TRUE(absl::IsNotFound(dir.status())) << dir.status();
  EXPECT_THAT(dir.status().message(), HasSubstr("no job 'gone-1' in runs or in the job index"));
}

TEST_F(JobIndexTest, AnIdThatIsNoFileNameIsRefused) {
  const JobIndex index(index_root());
  for (const std::string bad : {"", ".", "..", "a/b", ".hidden"}) {
    EXPECT_TRUE(absl::IsInvalidArgument(index.Record(bad, "/tmp"))) << bad;
    EXPECT_TRUE(absl::IsNotFound(index.Find(bad).status())) << bad;
  }
  EXPECT_FALSE(fs::exists(index_root() + "/b"));
}

TEST_F(JobIndexTest, JobsStartedTogetherAreAllRecorded) {
  constexpr int kJobs = 16;
  std::vector<std::thread> starts;
  for (int i = 0; i < kJobs; ++i) {
    starts.emplace_back([this, i] {
      EXPECT_TRUE(JobDirectory::Create(absl::StrCat(tmp_.path(), "/proj/runs/j-", i)).ok());
    });
  }
  for (std::thread& t : starts) t.join();
  EXPECT_EQ(JobIndex(index_root()).List().size(), static_cast<size_t>(kJobs));
  for (int i = 0; i < kJobs; ++i) {
    EXPECT_EQ(ReadFile(absl::StrCat(index_root(), "/j-", i)),
              absl::StrCat(tmp_.path(), "/proj/runs/j-", i, "\n"));
  }
}

// What ResolveJobDir says when run as `uid` in a child process: its code and message.
std::pair<absl::StatusCode, std::string> ResolveAs(uid_t uid, const std::string& job,
                                                   const std::string& root) {
  int fds[2];
  if (::pipe(fds) != 0) return {absl::StatusCode::kInternal, "pipe"};
  pid_t child = ::fork();
  if (child == 0) {
    ::close(fds[0]);
    if (::setgroups(0, nullptr) != 0 || ::setgid(uid) != 0 || ::setuid(uid) != 0) ::_exit(100);
    absl::StatusOr<std::string> dir = ResolveJobDir(job, root);
    const std::string text = std::string(dir.status().message());
    (void)!::write(fds[1], text.data(), text.size());
    ::_exit(static_cast<int>(dir.status().code()));
  }
  ::close(fds[1]);
  std::string text;
  char buf[512];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof(buf))) > 0;) text.append(buf, n);
  ::close(fds[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) == 100) return {absl::StatusCode::kInternal, text};
  return {static_cast<absl::StatusCode>(WEXITSTATUS(status)), text};
}

TEST_F(JobIndexTest, AnotherUsersJobIsRefusedAsTheirsNotAsMissing) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root, to look at the job as another user";
  // A shared project folder: runs/ open to all, one job's directory its owner's alone.
  const std::string root = tmp_.path() + "/shared/runs";
  ASSERT_TRUE(JobDirectory::Create(root + "/theirs-1").ok());
  WriteFile(root + "/theirs-1/job.yaml", "name: theirs\n");
  for (const std::string& d : {tmp_.path(), tmp_.path() + "/shared", root}) {
    ASSERT_EQ(::chmod(d.c_str(), 0755), 0) << d;
  }
  constexpr uid_t kNobody = 65534;
  auto [code, message] = ResolveAs(kNobody, "theirs-1", root);
  EXPECT_EQ(code, absl::StatusCode::kPermissionDenied) << message;
  EXPECT_THAT(message, HasSubstr("job 'theirs-1' exists but you may not read it"));
  EXPECT_THAT(message, HasSubstr(root + "/theirs-1 belongs to user root, drwx------"));
  // A job that is nowhere is still "no job".
  auto [missing_code, missing] = ResolveAs(kNobody, "other-1", root);
  EXPECT_EQ(missing_code, absl::StatusCode::kNotFound) << missing;
  EXPECT_THAT(missing, HasSubstr("no job 'other-1' in " + root));
  // Given by its path, the same.
  auto [by_path_code, by_path] = ResolveAs(kNobody, root + "/theirs-1", root);
  EXPECT_EQ(by_path_code, absl::StatusCode::kPermissionDenied) << by_path;
}

}  // namespace
}  // namespace dlaunch
