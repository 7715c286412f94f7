#include "common/targets/targets.h"

#include "common/jobspec/parser.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace iofleet::targets {
namespace {

using ::testing::ElementsAre;

jobspec::JobList Parse(const std::string& text) {
  auto list = jobspec::ParseJobText(text, "t");
  EXPECT_TRUE(list.ok()) << list.status();
  return list.ok() ? *list : jobspec::JobList{};
}

TEST(TargetsOfTest, FilenamesDirectoriesAndNull) {
  auto list = Parse(
      "[a]\nfilename=/dev/nvme0n1:/dev/nvme1n1\nsize=1m\n[b]\ndirectory=/mnt/x\nsize=1m\n"
      "[c]\nioengine=null\nsize=1m\n[d]\ndirectory=/mnt/y\nfilename=rel.dat\nsize=1m\n"
      "[e]\nsize=1m\n");
  EXPECT_THAT(TargetsOf(list),
              ElementsAre(Target{".", Kind::kDirectory}, Target{"/dev/nvme0n1", Kind::kFile},
                          Target{"/dev/nvme1n1", Kind::kFile}, Target{"/mnt/x", Kind::kDirectory},
                          Target{"/mnt/y/rel.dat", Kind::kFile}));
}

TEST(TargetsOfTest, DuplicatesCollapse) {
  auto list = Parse("[a]\nfilename=/f\nsize=1m\n[b]\nfilename=/f\nsize=1m\n");
  EXPECT_THAT(PathsOf(TargetsOf(list)), ElementsAre("/f"));
}

TEST(JobFilesTest, NamedAndGenerated) {
  auto list = Parse(
      "[gen]\ndirectory=/d/\nnrfiles=2\nsize=1m\n[named]\nfilename=a:/abs\n"
      "directory=/d\nsize=1m\n");
  EXPECT_THAT(JobFiles(list.jobs[0], 3), ElementsAre("/d/gen.3.0", "/d/gen.3.1"));
  EXPECT_THAT(JobFiles(list.jobs[1], 0), ElementsAre("/d/a", "/abs"));
}

// filename_format as fio 3.33 expands it (fio --filename_format=... with
// nrfiles=2 numjobs=2 makes these names).
TEST(JobFilesTest, FilenameFormat) {
  auto list = Parse("[fmt]\ndirectory=/d\nnrfiles=2\nsize=1m\nfilename_format=$JobName-$jobnum/$filenum.$filenum$clientuid\n");
  EXPECT_THAT(JobFiles(list.jobs[0], 1), ElementsAre("/d/fmt-1/0.0", "/d/fmt-1/1.1"));
  EXPECT_EQ(FormatFileName("", "j", 2, 3), "j.2.3");
  EXPECT_EQ(FormatFileName("fixed", "j", 2, 3), "fixed");  // every file the same name, as fio
}

TEST(LexicalNormalTest, Forms) {
  EXPECT_EQ(LexicalNormal("/a//b/./c/../d/"), "/a/b/d");
  EXPECT_EQ(LexicalNormal("/.."), "/");
  EXPECT_EQ(LexicalNormal("/../etc"), "/etc");
  EXPECT_EQ(LexicalNormal("a/../../b"), "../b");
  EXPECT_EQ(LexicalNormal(""), ".");
  EXPECT_EQ(LexicalNormal("./"), ".");
  EXPECT_EQ(LexicalNormal("/"), "/");
  EXPECT_EQ(LexicalNormal("/dev/nvme1/"), "/dev/nvme1");
}

TEST(PathUnderTest, WholeComponentsOnly) {
  // The controller's old check was a raw string prefix: /dev/nvme1 admitted /dev/nvme10n1.
  EXPECT_FALSE(PathUnder("/dev/nvme10n1", "/dev/nvme1"));
  EXPECT_FALSE(PathUnder("/dev/nvme1n1", "/dev/nvme1"));
  EXPECT_TRUE(PathUnder("/dev/nvme1", "/dev/nvme1"));
  EXPECT_TRUE(PathUnder("/dev/nvme1/", "/dev/nvme1"));
  EXPECT_TRUE(PathUnder("/dev/nvme1", "/dev/nvme1/"));
  EXPECT_TRUE(PathUnder("/data/x/y", "/data"));
  EXPECT_FALSE(PathUnder("/database", "/data"));
  EXPECT_TRUE(PathUnder("/anything", "/"));
  EXPECT_FALSE(PathUnder("/x", ""));
  EXPECT_FALSE(PathUnder("rel", "/data"));
}

TEST(PathUnderTest, DotDotComponentsCannotEscape) {
  EXPECT_FALSE(PathUnder("/data/../etc/passwd", "/data"));
  EXPECT_FALSE(PathUnder("/data/x/../../etc", "/data"));
  EXPECT_TRUE(PathUnder("/data/x/../y", "/data"));
  EXPECT_TRUE(PathUnder("/data/x", "/other/../data"));
  EXPECT_TRUE(PathUnder("sub/f", "."));
  EXPECT_FALSE(PathUnder("../f", "."));
  EXPECT_TRUE(PathUnder("..f", "."));
}

TEST(AllowedLexicallyTest, ControllerCheck) {
  const std::vector<std::string> allow = {"/dev/nvme1", "/mnt/scratch/"};
  EXPECT_TRUE(AllowedLexically({}, "/dev/sda"));
  EXPECT_TRUE(AllowedLexically(allow, "/dev/nvme1"));
  EXPECT_TRUE(AllowedLexically(allow, "/mnt/scratch/f"));
  EXPECT_TRUE(AllowedLexically(allow, "/mnt/scratch"));
  EXPECT_FALSE(AllowedLexically(allow, "/dev/nvme10n1"));
  EXPECT_FALSE(AllowedLexically(allow, "/dev/sda"));
  EXPECT_FALSE(AllowedLexically(allow, "/mnt/scratch/../etc"));
  EXPECT_FALSE(AllowedLexically(allow, "/mnt/scratchy"));
  // Relative paths depend on the agent's working directory: the agent decides.
  EXPECT_TRUE(AllowedLexically(allow, "."));
}

}  // namespace
}  // namespace iofleet::targets
