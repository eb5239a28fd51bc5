// History: in memory, bounded, persisted to a file that may not be writable.
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cli/console/line_editor.h"
#include "tests/cli/pty_screen.h"

namespace moonseed::cli {
namespace {

using Entries = std::vector<std::string>;

std::vector<std::string> file_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST(History, StoresConsecutiveDuplicatesAndEmptyLinesOnce) {
  History history;
  for (const char* line : {"a", "a", "", "b", "a"}) history.add(line);
  EXPECT_EQ(history.entries(), (Entries{"a", "b", "a"}));
}

TEST(History, KeepsOnlyTheNewestEntriesUpToItsCapacity) {
  History history(3);
  for (const char* line : {"1", "2", "3", "4", "5"}) history.add(line);
  EXPECT_EQ(history.entries(), (Entries{"3", "4", "5"}));
}

TEST(History, RefusesAnEntryOfSeveralLines) {
  History history;
  EXPECT_THROW(history.add("a\nb"), std::invalid_argument);
}

TEST(History, PersistsEntriesToItsFileForTheNextSession) {
  const std::string path = moonseed::testing::make_temp_dir("history") + "/history";
  History first;
  first.attach_file(path);
  first.add("e = ms.env.make(\"CartPole-v1\")");
  first.add("e:reset(1)");
  History second;
  second.attach_file(path);
  EXPECT_EQ(second.entries(), (Entries{"e = ms.env.make(\"CartPole-v1\")", "e:reset(1)"}));
}

TEST(History, BoundsItsFileToItsCapacity) {
  const std::string path = moonseed::testing::make_temp_dir("history") + "/history";
  History history(3);
  history.attach_file(path);
  for (const char* line : {"1", "2", "3", "4", "5"}) history.add(line);
  EXPECT_EQ(file_lines(path), (Entries{"3", "4", "5"}));
}

TEST(History, ReadsOnlyTheNewestLinesOfALongerFile) {
  const std::string path = moonseed::testing::make_temp_dir("history") + "/history";
  std::ofstream(path) << "1\n2\n3\n4\n";
  History history(2);
  history.attach_file(path);
  EXPECT_EQ(history.entries(), (Entries{"3", "4"}));
}

TEST(History, WritesItsFileReadableByTheUserOnly) {
  const std::string path = moonseed::testing::make_temp_dir("history") + "/history";
  History history;
  history.attach_file(path);
  history.add("token = 'secret'");
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST(History, KeepsWorkingWhenItsFileCannotBeWritten) {
  History history;
  history.attach_file("/nonexistent-moonseed-dir/history");
  EXPECT_NO_THROW(history.add("1+1"));
  EXPECT_EQ(history.entries(), (Entries{"1+1"}));
  EXPECT_FALSE(history.save());
}

TEST(History, DefaultPathIsMoonseedHistoryWhenSetElseInTheHomeDirectory) {
  const char* saved_history = std::getenv("MOONSEED_HISTORY");
  const char* saved_home = std::getenv("HOME");
  const std::string old_history = saved_history ? saved_history : "";
  const std::string old_home = saved_home ? saved_home : "";
  setenv("MOONSEED_HISTORY", "/tmp/somewhere/h", 1);
  EXPECT_EQ(default_history_path(), "/tmp/somewhere/h");
  unsetenv("MOONSEED_HISTORY");
  setenv("HOME", "/home/someone", 1);
  EXPECT_EQ(default_history_path(), "/home/someone/.moonseed_history");
  if (saved_history) setenv("MOONSEED_HISTORY", old_history.c_str(), 1);
  if (saved_home) {
    setenv("HOME", old_home.c_str(), 1);
  } else {
    unsetenv("HOME");
  }
}

TEST(CommonPrefixLength, IsTheLengthTheWordsShare) {
  EXPECT_EQ(common_prefix_length({"reset", "restore", "resume"}), 3u);
  EXPECT_EQ(common_prefix_length({"spec"}), 4u);
  EXPECT_EQ(common_prefix_length({}), 0u);
}

TEST(CommonPrefixLength, NeverSplitsAUtf8Character) {
  // "é" is C3 A9 and "è" is C3 A8: they share a byte but no character.
  EXPECT_EQ(common_prefix_length({"\xc3\xa9t\xc3\xa9", "\xc3\xa8re"}), 0u);
}

}  // namespace
}  // namespace moonseed::cli
