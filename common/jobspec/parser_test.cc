#include "common/jobspec/parser.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "common/testing/temp_dir.h"

namespace iofleet::jobspec {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

constexpr uint64_t KiB = 1024;
constexpr uint64_t MiB = 1024 * 1024;
constexpr uint64_t GiB = 1024 * MiB;
constexpr uint64_t kSec = 1000000;

const std::map<std::string, std::string> kNoEnv;

JobList MustParse(const std::string& text, ParseOptions opts = {}) {
  if (opts.env == nullptr) opts.env = &kNoEnv;
  auto l = ParseJobText(text, "j.fio", opts);
  EXPECT_TRUE(l.ok()) << l.status() << "\n--- text:\n" << text;
  return l.ok() ? *l : JobList{};
}

JobSpec MustParseJob(const std::string& options) {
  JobList l = MustParse("[job]\n" + options);
  EXPECT_EQ(l.jobs.size(), 1u);
  return l.jobs.empty() ? JobSpec{} : l.jobs[0];
}

std::string ParseError(const std::string& text, ParseOptions opts = {}) {
  if (opts.env == nullptr) opts.env = &kNoEnv;
  auto l = ParseJobText(text, "j.fio", opts);
  EXPECT_FALSE(l.ok()) << "expected an error for:\n" << text;
  if (l.ok()) return "";
  EXPECT_EQ(l.status().code(), absl::StatusCode::kInvalidArgument) << l.status();
  return std::string(l.status().message());
}

// An error for a one-line option in job "job" must name the job, option and value.
void ExpectOptionError(const std::string& line, const std::string& option,
                       const std::string& value) {
  const std::string msg = ParseError("[job]\n" + line + "\n");
  EXPECT_THAT(msg,
              HasSubstr("j.fio:2: job \"job\": option \"" + option + "\": value \"" + value + "\""))
      << "line: " << line;
}

// The shared temp dir, with Write making the file's parent dirs.
class TempDir : public iofleet::testing::TempDir {
 public:
  TempDir() : iofleet::testing::TempDir("jobspec_test") { EXPECT_TRUE(ok()); }
  std::string Write(const std::string& rel, const std::string& text) const {
    const std::string p = path() + "/" + rel;
    std::filesystem::create_directories(std::filesystem::path(p).parent_path());
    std::ofstream(p) << text;
    return p;
  }
};

// ---------------------------------------------------------------------------
// Grammar.

TEST(GrammarTest, CommentsBlanksAndTrailingComments) {
  JobList l = MustParse(
      "; leading comment\n"
      "   # indented comment\n"
      "\n"
      "  [seq]   \n"
      "\trw = write   ; trailing comment\n"
      "bs=8k# no blank before\n"
      "iodepth =4\r\n");
  ASSERT_EQ(l.jobs.size(), 1u);
  const JobSpec& j = l.jobs[0];
  EXPECT_EQ(j.name, "seq");
  EXPECT_EQ(j.rw, RwPattern::kWrite);
  EXPECT_EQ(j.bs[kRead], 8 * KiB);
  EXPECT_EQ(j.iodepth, 4u);
  EXPECT_THAT(j.raw_options,
              ElementsAre(Pair("rw", "write"), Pair("bs", "8k"), Pair("iodepth", "4")));
}

TEST(GrammarTest, OptionBeforeFirstSectionIsAnErrorWithFileAndLine) {
  EXPECT_THAT(ParseError("# c\nbs=4k\n[a]\n"), HasSubstr("j.fio:2:"));
  EXPECT_THAT(ParseError("# c\nbs=4k\n[a]\n"), HasSubstr("bs=4k"));
}

TEST(GrammarTest, BadSectionHeaders) {
  EXPECT_THAT(ParseError("[abc\nrw=read\n"), HasSubstr("j.fio:1:"));
  EXPECT_THAT(ParseError("[a]\n[]\n"), HasSubstr("j.fio:2:"));
}

TEST(GrammarTest, NoJobsIsAnError) {
  EXPECT_THAT(ParseError("[global]\nbs=8k\n"), HasSubstr("no jobs"));
  EXPECT_THAT(ParseError(""), HasSubstr("no jobs"));
}

TEST(GrammarTest, SectionNamesStartingWithGlobalAreGlobal) {
  JobList l = MustParse("[global-settings]\nbs=16k\n[globalx]\niodepth=8\n[job]\n");
  ASSERT_EQ(l.jobs.size(), 1u);
  EXPECT_EQ(l.jobs[0].name, "job");
  EXPECT_EQ(l.jobs[0].bs[kWrite], 16 * KiB);
  EXPECT_EQ(l.jobs[0].iodepth, 8u);
  EXPECT_THAT(l.global_options, ElementsAre(Pair("bs", "16k"), Pair("iodepth", "8")));
}

TEST(GrammarTest, OnlyGlobalsAboveAJobAffectIt) {
  JobList l = MustParse(
      "[global]\nbs=8k\nrw=randread\n"
      "[a]\n"
      "[global]\nbs=16k\n"
      "[b]\nrw=write\n"
      "[c]\n");
  ASSERT_EQ(l.jobs.size(), 3u);
  EXPECT_EQ(l.jobs[0].bs[kRead], 8 * KiB);
  EXPECT_EQ(l.jobs[0].rw, RwPattern::kRandRead);
  EXPECT_EQ(l.jobs[1].bs[kRead], 16 * KiB);
  EXPECT_EQ(l.jobs[1].rw, RwPattern::kWrite);  // own option overrides the global
  EXPECT_EQ(l.jobs[2].bs[kRead], 16 * KiB);
  EXPECT_EQ(l.jobs[2].rw, RwPattern::kRandRead);  // earlier global still applies
  EXPECT_TRUE(l.jobs[0].raw_options.empty());
  EXPECT_THAT(l.jobs[1].raw_options, ElementsAre(Pair("rw", "write")));
  EXPECT_THAT(l.global_options,
              ElementsAre(Pair("bs", "8k"), Pair("rw", "randread"), Pair("bs", "16k")));
}

TEST(GrammarTest, JobOptionsDoNotLeakIntoLaterJobs) {
  JobList l = MustParse("[a]\niodepth=32\n[b]\n");
  EXPECT_EQ(l.jobs[0].iodepth, 32u);
  EXPECT_EQ(l.jobs[1].iodepth, 1u);
}

TEST(GrammarTest, NameOptionOverridesSectionName) {
  JobList l = MustParse("[a]\nname=renamed\n");
  EXPECT_EQ(l.jobs[0].name, "renamed");
}

TEST(GrammarTest, UnknownOptionNamesJobOptionAndLine) {
  const std::string msg = ParseError("[seq]\nrw=read\nfrobnicate=3\n");
  EXPECT_THAT(msg, HasSubstr("j.fio:3"));
  EXPECT_THAT(msg, HasSubstr("job \"seq\""));
  EXPECT_THAT(msg, HasSubstr("unknown option \"frobnicate\""));
  EXPECT_THAT(ParseError("[global]\nbogus\n[a]\n"), HasSubstr("unknown option \"bogus\""));
}

TEST(GrammarTest, BareFlagsMeanOneForEveryBoolean) {
  struct Flag {
    const char* name;
    bool JobSpec::*field;
    const char* with = "";  // engine options need their engine
  };
  const Flag flags[] = {
      {"time_based", &JobSpec::time_based},
      {"norandommap", &JobSpec::norandommap},
      {"thread", &JobSpec::thread},
      {"group_reporting", &JobSpec::group_reporting},
      {"hipri", &JobSpec::hipri, "ioengine=io_uring\n"},
      {"fixedbufs", &JobSpec::fixedbufs, "ioengine=io_uring\n"},
      {"registerfiles", &JobSpec::registerfiles, "ioengine=io_uring\n"},
      {"sqthread_poll", &JobSpec::sqthread_poll, "ioengine=io_uring\n"},
      {"userspace_reap", &JobSpec::userspace_reap, "ioengine=libaio\n"},
      {"stonewall", &JobSpec::stonewall},
      {"new_group", &JobSpec::new_group},
      {"end_fsync", &JobSpec::end_fsync},
      {"direct", &JobSpec::direct},
      {"bs_unaligned", &JobSpec::bs_unaligned},
      {"lat_percentiles", &JobSpec::lat_percentiles},
      {"slat_percentiles", &JobSpec::slat_percentiles},
  };
  for (const Flag& f : flags) {
    JobSpec off = MustParseJob(std::string(f.with) + f.name + "=0\nruntime=10\n");
    JobSpec on = MustParseJob(std::string(f.with) + f.name + "\nruntime=10\n");
    EXPECT_FALSE(off.*f.field) << f.name;
    EXPECT_TRUE(on.*f.field) << f.name;
    EXPECT_THAT(on.raw_options, ::testing::Contains(Pair(f.name, ""))) << f.name;
  }
  // Booleans whose default is 1.
  for (const Flag& f :
       {Flag{"invalidate", &JobSpec::invalidate}, Flag{"randrepeat", &JobSpec::randrepeat},
        Flag{"clat_percentiles", &JobSpec::clat_percentiles}}) {
    EXPECT_TRUE(MustParseJob("").*f.field) << f.name;
    EXPECT_FALSE(MustParseJob(std::string(f.name) + "=0").*f.field) << f.name;
    EXPECT_TRUE(MustParseJob(std::string(f.name)).*f.field) << f.name;
  }
}

TEST(GrammarTest, BooleanValueMustBeZeroOrOne) {
  ExpectOptionError("thread=2", "thread", "2");
  ExpectOptionError("direct=yes", "direct", "yes");
}

TEST(GrammarTest, BareNonBooleanNeedsAValue) {
  const std::string msg = ParseError("[job]\niodepth\n");
  EXPECT_THAT(msg, HasSubstr("job \"job\""));
  EXPECT_THAT(msg, HasSubstr("option \"iodepth\" requires a value"));
}

TEST(GrammarTest, BufferedIsTheNegationOfDirect) {
  EXPECT_FALSE(MustParseJob("").direct);
  EXPECT_FALSE(MustParseJob("direct=1\nbuffered\n").direct);
  EXPECT_TRUE(MustParseJob("buffered=0\n").direct);
  EXPECT_TRUE(MustParseJob("buffered=1\ndirect=1\n").direct);
}

// ---------------------------------------------------------------------------
// include.

TEST(IncludeTest, RelativeToIncludingFileAndNested) {
  TempDir dir;
  dir.Write("sub/inner.fio", "iodepth=16\n");
  dir.Write("sub/common.fio", "; shared settings\nbs=64k\ninclude inner.fio\n");
  const std::string main = dir.Write("main.fio", "[global]\ninclude sub/common.fio\n[a]\n");
  auto l = ParseCommandLine(CommandLine{{main}, {}}, ParseOptions{&kNoEnv, ""});
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(l->jobs[0].bs[kRead], 64 * KiB);
  EXPECT_EQ(l->jobs[0].iodepth, 16u);
  EXPECT_THAT(l->global_options, ElementsAre(Pair("bs", "64k"), Pair("iodepth", "16")));
}

TEST(IncludeTest, RelativeToBaseDirForText) {
  TempDir dir;
  dir.Write("opts.fio", "rw=randwrite\n");
  ParseOptions opts{&kNoEnv, dir.path()};
  JobList l = MustParse("[a]\ninclude opts.fio\nbs=4k\n", opts);
  EXPECT_EQ(l.jobs[0].rw, RwPattern::kRandWrite);
  EXPECT_THAT(l.jobs[0].raw_options, ElementsAre(Pair("rw", "randwrite"), Pair("bs", "4k")));
}

TEST(IncludeTest, RelativeToCwdFirst) {
  TempDir dir;
  dir.Write("cwd_opts.fio", "iodepth=3\n");
  TempDir other;
  other.Write("cwd_opts.fio", "iodepth=5\n");
  char old[4096];
  ASSERT_NE(getcwd(old, sizeof(old)), nullptr);
  ASSERT_EQ(chdir(dir.path().c_str()), 0);
  JobList l = MustParse("[a]\ninclude cwd_opts.fio\n", ParseOptions{&kNoEnv, other.path()});
  ASSERT_EQ(chdir(old), 0);
  ASSERT_EQ(l.jobs.size(), 1u);
  EXPECT_EQ(l.jobs[0].iodepth, 3u);
}

TEST(IncludeTest, AbsolutePath) {
  TempDir dir;
  const std::string p = dir.Write("abs.fio", "numjobs=4\n");
  EXPECT_EQ(MustParse("[a]\ninclude " + p + "\n").jobs[0].numjobs, 4u);
}

TEST(IncludeTest, SectionInIncludeIsAnError) {
  TempDir dir;
  dir.Write("bad.fio", "bs=4k\n[sneaky]\n");
  const std::string msg = ParseError("[a]\ninclude bad.fio\n", ParseOptions{&kNoEnv, dir.path()});
  EXPECT_THAT(msg, HasSubstr("bad.fio:2"));
  EXPECT_THAT(msg, HasSubstr("sections"));
}

TEST(IncludeTest, CycleIsAnError) {
  TempDir dir;
  dir.Write("x.fio", "include y.fio\n");
  dir.Write("y.fio", "include x.fio\n");
  EXPECT_THAT(ParseError("[a]\ninclude x.fio\n", ParseOptions{&kNoEnv, dir.path()}),
              HasSubstr("cycle"));
}

TEST(IncludeTest, MissingFileNamesItAndTheLine) {
  const std::string msg = ParseError("[a]\n\ninclude /nonexistent/zzz.fio\n");
  EXPECT_THAT(msg, HasSubstr("j.fio:3"));
  EXPECT_THAT(msg, HasSubstr("zzz.fio"));
}

TEST(IncludeTest, ErrorsInsideIncludeNameTheIncludedFile) {
  TempDir dir;
  dir.Write("inc.fio", "bs=4k\niodepth=abc\n");
  const std::string msg = ParseError("[a]\ninclude inc.fio\n", ParseOptions{&kNoEnv, dir.path()});
  EXPECT_THAT(msg, HasSubstr("inc.fio:2"));
  EXPECT_THAT(msg, HasSubstr("option \"iodepth\": value \"abc\""));
}

// ---------------------------------------------------------------------------
// Substitution and arithmetic.

TEST(SubstitutionTest, EnvVariablesFromOptionsMap) {
  const std::map<std::string, std::string> env = {{"DEV", "/dev/nvme0n1"}, {"QD", "32"}};
  JobList l =
      MustParse("[a]\nfilename=${DEV}\niodepth=${QD}\nbs=4k${UNSET}\n", ParseOptions{&env, ""});
  EXPECT_THAT(l.jobs[0].filenames, ElementsAre("/dev/nvme0n1"));
  EXPECT_EQ(l.jobs[0].iodepth, 32u);
  EXPECT_EQ(l.jobs[0].bs[kRead], 4 * KiB);  // unset -> empty
  // fio's "job options" order: filename is applied (and listed) last.
  EXPECT_THAT(l.jobs[0].raw_options, ElementsAre(Pair("iodepth", "32"), Pair("bs", "4k"),
                                                 Pair("filename", "/dev/nvme0n1")));
}

TEST(SubstitutionTest, EnvVariablesFromProcessEnvironment) {
  setenv("JOBSPEC_TEST_RW", "randrw", 1);
  unsetenv("JOBSPEC_TEST_UNSET");
  auto l = ParseJobText("[a]\nrw=${JOBSPEC_TEST_RW}\ndirectory=/x${JOBSPEC_TEST_UNSET}\n", "t");
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(l->jobs[0].rw, RwPattern::kRandReadWrite);
  EXPECT_EQ(l->jobs[0].directory, "/x");
}

TEST(SubstitutionTest, EmptyVariableLeavesOptionWithoutValueError) {
  ExpectOptionError("iodepth=${NOPE}", "iodepth", "");
}

TEST(SubstitutionTest, Keywords) {
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  const uint32_t ncpus = static_cast<uint32_t>(sysconf(_SC_NPROCESSORS_ONLN));
  JobSpec j = MustParseJob("bs=$pagesize\nnumjobs=$ncpus\n");
  EXPECT_EQ(j.bs[kRead], page);
  EXPECT_EQ(j.numjobs, ncpus);
  // With an operator, fio pipes the result through bc; we evaluate it ourselves.
  EXPECT_EQ(MustParseJob("numjobs=$ncpus*2\n").numjobs, 2 * ncpus);
  EXPECT_EQ(MustParseJob("iodepth=$ncpus+1\n").iodepth, ncpus + 1);
  const uint64_t mb = static_cast<uint64_t>(sysconf(_SC_PHYS_PAGES)) * page / (1024 * 1024);
  EXPECT_EQ(MustParseJob("size=$mb_memory\n").size, mb);  // bytes: no suffix
  EXPECT_THAT(MustParseJob("numjobs=$ncpus\n").raw_options[0],
              Pair("numjobs", std::to_string(ncpus)));
}

TEST(ArithmeticTest, ExpressionsInValues) {
  EXPECT_EQ(MustParseJob("size=(1g*3)").size, 3 * GiB);
  EXPECT_EQ(MustParseJob("bs=(4k*2)").bs[kWrite], 8 * KiB);
  EXPECT_EQ(MustParseJob("iodepth=(2^5)").iodepth, 32u);
  EXPECT_EQ(MustParseJob("iodepth=((3 + 5) * 2 - 6 / 3 % 4)").iodepth, 14u);
  EXPECT_EQ(MustParseJob("offset=(1m - 4k)").offset, MiB - 4 * KiB);
  // Time expressions: a bare number is in the option's unit (seconds).
  EXPECT_EQ(MustParseJob("runtime=(10+5)").runtime_us, 15 * kSec);
  EXPECT_EQ(MustParseJob("runtime=(1m+30s)").runtime_us, 90 * kSec);
  EXPECT_EQ(MustParseJob("ramp_time=(500ms*3)").ramp_time_us, 1500000u);
  // Per-direction lists and ranges may hold expressions.
  JobSpec j = MustParseJob("bs=(2*4k),(4k+4k+4k)\nbsrange=(1k*2)-(8k)");
  EXPECT_EQ(j.bs[kRead], 8 * KiB);
  EXPECT_EQ(j.bs[kWrite], 12 * KiB);
  EXPECT_EQ(j.bs_min[kRead], 2 * KiB);
  EXPECT_EQ(j.bs_max[kRead], 8 * KiB);
  // The raw option keeps the expression text.
  EXPECT_THAT(MustParseJob("size=(1g*3)").raw_options[0], Pair("size", "(1g*3)"));
}

TEST(ArithmeticTest, BadExpressionsAreErrors) {
  ExpectOptionError("size=(1g*)", "size", "(1g*)");
  ExpectOptionError("iodepth=(4/0)", "iodepth", "(4/0)");
  ExpectOptionError("size=(2-5)", "size", "(2-5)");  // negative
  ExpectOptionError("bs=(4q)", "bs", "(4q)");
}

// ---------------------------------------------------------------------------
// Sizes.

TEST(SizeTest, PlainHexAndSuffixes) {
  EXPECT_EQ(*ParseSize("0"), 0u);
  EXPECT_EQ(*ParseSize("512"), 512u);
  EXPECT_EQ(*ParseSize("512b"), 512u);
  EXPECT_EQ(*ParseSize("0x10"), 16u);
  EXPECT_EQ(*ParseSize("0X1F"), 31u);
  EXPECT_EQ(*ParseSize("0x10k"), 16 * KiB);
  EXPECT_EQ(*ParseSize(" 4k "), 4 * KiB);
}

TEST(SizeTest, KbBase1024MakesPlainSuffixesBinaryAndIecDecimal) {
  EXPECT_EQ(*ParseSize("4k"), 4 * KiB);
  EXPECT_EQ(*ParseSize("4K"), 4 * KiB);
  EXPECT_EQ(*ParseSize("4kb"), 4 * KiB);
  EXPECT_EQ(*ParseSize("4KB"), 4 * KiB);
  EXPECT_EQ(*ParseSize("2m"), 2 * MiB);
  EXPECT_EQ(*ParseSize("2g"), 2 * GiB);
  EXPECT_EQ(*ParseSize("1t"), 1024 * GiB);
  EXPECT_EQ(*ParseSize("1p"), 1024 * 1024 * GiB);
  EXPECT_EQ(*ParseSize("4ki"), 4000u);
  EXPECT_EQ(*ParseSize("4KiB"), 4000u);
  EXPECT_EQ(*ParseSize("1Mi"), 1000000u);
  EXPECT_EQ(*ParseSize("1mib"), 1000000u);
  EXPECT_EQ(*ParseSize("1GiB"), 1000000000u);
  EXPECT_EQ(*ParseSize("1tib"), 1000000000000u);
  EXPECT_EQ(*ParseSize("1pib"), 1000000000000000u);
}

TEST(SizeTest, KbBase1000FlipsTheRule) {
  EXPECT_EQ(*ParseSize("4k", 1000), 4000u);
  EXPECT_EQ(*ParseSize("4kb", 1000), 4000u);
  EXPECT_EQ(*ParseSize("1m", 1000), 1000000u);
  EXPECT_EQ(*ParseSize("4KiB", 1000), 4 * KiB);
  EXPECT_EQ(*ParseSize("1gi", 1000), GiB);
}

TEST(SizeTest, Errors) {
  for (const char* bad :
       {"", "abc", "4q", "4kbx", "-4k", "4 k", "1.5g", "99999999999999999999", "16384p", "10%"}) {
    auto r = ParseSize(bad);
    EXPECT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  }
  EXPECT_THAT(std::string(ParseSize("4q").status().message()), HasSubstr("\"q\""));
}

TEST(SizeTest, Percent) {
  auto p = ParseSizeOrPercent("12.5%");
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p->is_percent);
  EXPECT_DOUBLE_EQ(p->percent, 12.5);
  auto b = ParseSizeOrPercent("8k");
  ASSERT_TRUE(b.ok());
  EXPECT_FALSE(b->is_percent);
  EXPECT_EQ(b->bytes, 8 * KiB);
  EXPECT_FALSE(ParseSizeOrPercent("0%").ok());
  EXPECT_FALSE(ParseSizeOrPercent("101%").ok());
  EXPECT_FALSE(ParseSizeOrPercent("x%").ok());
}

TEST(SizeTest, KbBaseOptionAppliesBeforeSizesInTheSameSection) {
  // kb_base written after size still applies to it (fio sorts options).
  JobSpec j = MustParseJob("size=1m\nbs=4k\nkb_base=1000\n");
  EXPECT_EQ(j.kb_base, 1000u);
  EXPECT_EQ(j.size, 1000000u);
  EXPECT_EQ(j.bs[kRead], 4000u);
  EXPECT_EQ(MustParseJob("bs=4KiB\nkb_base=1000").bs[kRead], 4 * KiB);
  // raw_options are in fio's order (its "job options"): kb_base first.
  EXPECT_EQ(j.raw_options.front().first, "kb_base");
}

TEST(SizeTest, KbBaseFromGlobalAppliesToJob) {
  JobList l = MustParse("[global]\nkb_base=1000\n[a]\nsize=2k\n[b]\nkb_base=1024\nsize=2k\n");
  EXPECT_EQ(l.jobs[0].size, 2000u);
  EXPECT_EQ(l.jobs[1].size, 2 * KiB);
}

TEST(SizeTest, GlobalSizeParsedWithGlobalKbBase) {
  // A size in [global] is read with the kb_base in effect there, not the job's.
  JobList l = MustParse("[global]\nsize=1k\n[a]\nkb_base=1000\n");
  EXPECT_EQ(l.jobs[0].size, 1024u);
  EXPECT_EQ(l.jobs[0].kb_base, 1000u);
}

TEST(SizeTest, SizeOptions) {
  JobSpec j = MustParseJob("size=10g\nfilesize=1g\nio_size=5g\noffset=4k\noffset_increment=1m\n");
  EXPECT_EQ(j.size, 10 * GiB);
  EXPECT_DOUBLE_EQ(j.size_percent, 0);
  EXPECT_EQ(j.filesize, GiB);
  EXPECT_EQ(j.filesize_high, GiB);
  EXPECT_EQ(j.io_size, 5 * GiB);
  EXPECT_EQ(j.offset, 4 * KiB);
  EXPECT_EQ(j.offset_increment, MiB);
  EXPECT_EQ(MustParseJob("io_limit=3m").io_size, 3 * MiB);
  EXPECT_THAT(MustParseJob("io_limit=3m").raw_options, ElementsAre(Pair("io_size", "3m")));
}

TEST(SizeTest, PercentOptions) {
  JobSpec j = MustParseJob("size=50%\noffset=25%\nio_size=10%\noffset_increment=5%\n");
  EXPECT_EQ(j.size, 0u);
  EXPECT_DOUBLE_EQ(j.size_percent, 50);
  EXPECT_DOUBLE_EQ(j.offset_percent, 25);
  EXPECT_DOUBLE_EQ(j.io_size_percent, 10);
  EXPECT_DOUBLE_EQ(j.offset_increment_percent, 5);
  // A later byte value replaces the percent.
  JobSpec k = MustParseJob("size=50%\nsize=1m\n");
  EXPECT_EQ(k.size, MiB);
  EXPECT_DOUBLE_EQ(k.size_percent, 0);
  ExpectOptionError("size=150%", "size", "150%");
  ExpectOptionError("bs=10%", "bs", "10%");
}

TEST(SizeTest, FilesizeRange) {
  JobSpec j = MustParseJob("filesize=2m-1m\n");
  EXPECT_EQ(j.filesize, MiB);
  EXPECT_EQ(j.filesize_high, 2 * MiB);
  j = MustParseJob("filesize=1m:4m\n");
  EXPECT_EQ(j.filesize, MiB);
  EXPECT_EQ(j.filesize_high, 4 * MiB);
}

TEST(SizeTest, ZeroNegativeAndUnknownSuffixErrors) {
  ExpectOptionError("size=0", "size", "0");
  ExpectOptionError("size=-1", "size", "-1");
  ExpectOptionError("filesize=0", "filesize", "0");
  ExpectOptionError("io_size=0", "io_size", "0");
  ExpectOptionError("size=10q", "size", "10q");
  ExpectOptionError("offset=4q", "offset", "4q");
  ExpectOptionError("offset=z", "offset", "z");
  ExpectOptionError("bs=0", "bs", "0");
  ExpectOptionError("bs=4k,0", "bs", "4k,0");
  ExpectOptionError("bs=-4k", "bs", "-4k");
  EXPECT_EQ(MustParseJob("offset=0").offset, 0u);  // a position, not a size
}

// ---------------------------------------------------------------------------
// Time.

TEST(TimeTest, ParseTimeUs) {
  EXPECT_EQ(*ParseTimeUs("10"), 10 * kSec);
  EXPECT_EQ(*ParseTimeUs("10s"), 10 * kSec);
  EXPECT_EQ(*ParseTimeUs("10S"), 10 * kSec);
  EXPECT_EQ(*ParseTimeUs("2m"), 120 * kSec);
  EXPECT_EQ(*ParseTimeUs("1h"), 3600 * kSec);
  EXPECT_EQ(*ParseTimeUs("1d"), 86400 * kSec);
  EXPECT_EQ(*ParseTimeUs("250ms"), 250000u);
  EXPECT_EQ(*ParseTimeUs("250msec"), 250000u);
  EXPECT_EQ(*ParseTimeUs("7us"), 7u);
  EXPECT_EQ(*ParseTimeUs("7usec"), 7u);
  EXPECT_EQ(*ParseTimeUs("5", 1), 5u);  // default unit
  for (const char* bad : {"10x", "", "abc", "-5", "1.5s", "10 s"}) {
    EXPECT_FALSE(ParseTimeUs(bad).ok()) << bad;
  }
}

TEST(TimeTest, TimeOptions) {
  JobSpec j = MustParseJob("runtime=30\nramp_time=5s\nstartdelay=100ms\n");
  EXPECT_EQ(j.runtime_us, 30 * kSec);
  EXPECT_EQ(j.ramp_time_us, 5 * kSec);
  EXPECT_EQ(j.startdelay_us, 100000u);
  EXPECT_EQ(j.startdelay_high_us, 100000u);
  EXPECT_EQ(MustParseJob("timeout=1m").runtime_us, 60 * kSec);
  EXPECT_THAT(MustParseJob("timeout=1m").raw_options, ElementsAre(Pair("runtime", "1m")));
}

TEST(TimeTest, StartdelayRange) {
  JobSpec j = MustParseJob("startdelay=10-2\n");
  EXPECT_EQ(j.startdelay_us, 2 * kSec);
  EXPECT_EQ(j.startdelay_high_us, 10 * kSec);
  j = MustParseJob("startdelay=1s:1m\n");
  EXPECT_EQ(j.startdelay_us, kSec);
  EXPECT_EQ(j.startdelay_high_us, 60 * kSec);
}

TEST(TimeTest, BadTimeNamesOptionAndValue) {
  const std::string msg = ParseError("[seq]\nruntime=10x\n");
  EXPECT_THAT(msg, HasSubstr("j.fio:2: job \"seq\": option \"runtime\": value \"10x\""));
  ExpectOptionError("ramp_time=abc", "ramp_time", "abc");
  ExpectOptionError("startdelay=1-2q", "startdelay", "1-2q");
}

TEST(TimeTest, TimeBasedWithoutRuntimeIsIgnored) {
  EXPECT_FALSE(MustParseJob("time_based\n").time_based);
  EXPECT_FALSE(MustParseJob("time_based\nruntime=0\n").time_based);
  EXPECT_TRUE(MustParseJob("time_based\nruntime=1\n").time_based);
}

// ---------------------------------------------------------------------------
// Block sizes.

TEST(BsTest, PerDirectionLists) {
  using A = std::array<uint64_t, kNumDdirs>;
  EXPECT_EQ(MustParseJob("").bs, (A{4096, 4096, 4096}));
  EXPECT_EQ(MustParseJob("bs=8k").bs, (A{8192, 8192, 8192}));
  EXPECT_EQ(MustParseJob("bs=8k,16k").bs, (A{8192, 16384, 16384}));
  EXPECT_EQ(MustParseJob("bs=8k,16k,32k").bs, (A{8192, 16384, 32768}));
  EXPECT_EQ(MustParseJob("bs=8k,").bs, (A{8192, 4096, 4096}));
  EXPECT_EQ(MustParseJob("bs=,16k").bs, (A{4096, 16384, 16384}));
  EXPECT_EQ(MustParseJob("bs=8k,16k,").bs, (A{8192, 16384, 4096}));
  EXPECT_EQ(MustParseJob("bs=,,1m").bs, (A{4096, 4096, MiB}));
  // Without a comma, ':' and '-' also separate (fio's plain-integer rule).
  EXPECT_EQ(MustParseJob("bs=8k:16k").bs, (A{8192, 16384, 16384}));
  EXPECT_EQ(MustParseJob("bs=8k-16k").bs, (A{8192, 16384, 16384}));
  EXPECT_EQ(MustParseJob("blocksize=2k").bs, (A{2048, 2048, 2048}));
  EXPECT_THAT(MustParseJob("blocksize=2k").raw_options, ElementsAre(Pair("bs", "2k")));
  ExpectOptionError("bs=1k,2k,3k,4k", "bs", "1k,2k,3k,4k");
}

TEST(BsTest, MinMaxDefaultToBs) {
  JobSpec j = MustParseJob("bs=8k,16k");
  EXPECT_EQ(j.bs_min, j.bs);
  EXPECT_EQ(j.bs_max, j.bs);
}

TEST(BsTest, Bsrange) {
  JobSpec j = MustParseJob("bsrange=4k-64k");
  for (int d = 0; d < kNumDdirs; ++d) {
    EXPECT_EQ(j.bs_min[d], 4 * KiB);
    EXPECT_EQ(j.bs_max[d], 64 * KiB);
  }
  j = MustParseJob("blocksize_range=64k:4k,1k-2k");  // swapped, per direction
  EXPECT_EQ(j.bs_min[kRead], 4 * KiB);
  EXPECT_EQ(j.bs_max[kRead], 64 * KiB);
  EXPECT_EQ(j.bs_min[kWrite], 1 * KiB);
  EXPECT_EQ(j.bs_max[kWrite], 2 * KiB);
  EXPECT_EQ(j.bs_min[kTrim], 1 * KiB);
  EXPECT_EQ(j.bs_max[kTrim], 2 * KiB);
  EXPECT_THAT(j.raw_options, ElementsAre(Pair("bsrange", "64k:4k,1k-2k")));
  j = MustParseJob("bs=8k\nbsrange=,1k-2k,");  // read keeps bs
  EXPECT_EQ(j.bs_min[kRead], 8 * KiB);
  EXPECT_EQ(j.bs_max[kRead], 8 * KiB);
  EXPECT_EQ(j.bs_min[kWrite], 1 * KiB);
  EXPECT_EQ(j.bs_min[kTrim], 8 * KiB);
  ExpectOptionError("bsrange=0-4k", "bsrange", "0-4k");
  ExpectOptionError("bsrange=4k-8q", "bsrange", "4k-8q");
}

// fio's t/jobs/t0023.fio writes a bssplit into bsrange; fio 3.33 runs it as
// "bs=(R) 512B-1024B, (W) 512B-1024B, (T) 512B-1024B": the range splits at the
// first ':' and each end keeps its number and unit, dropping what follows.
TEST(BsTest, BsrangeReadsAnEndAsFioDoes) {
  JobSpec j = MustParseJob("bsrange=512/25:1k:25:2k:25:4k/25");
  for (int d = 0; d < kNumDdirs; ++d) {
    EXPECT_EQ(j.bs_min[d], 512u);
    EXPECT_EQ(j.bs_max[d], 1 * KiB);
  }
  j = MustParseJob("bsrange=1k:2k-4k");  // '-' separates first, as in fio
  EXPECT_EQ(j.bs_min[kRead], 1 * KiB);
  EXPECT_EQ(j.bs_max[kRead], 4 * KiB);
  ExpectOptionError("bsrange=4k-8kq", "bsrange", "4k-8kq");
  ExpectOptionError("bsrange=/25-4k", "bsrange", "/25-4k");
}

TEST(BsTest, BssplitFillInAndSort) {
  JobSpec j = MustParseJob("bssplit=4k/10:64k/50:32k/40");
  ASSERT_EQ(j.bssplit[kRead].size(), 3u);
  EXPECT_EQ(j.bssplit[kRead][0], (BsSplitEntry{4 * KiB, 10}));
  EXPECT_EQ(j.bssplit[kRead][1], (BsSplitEntry{32 * KiB, 40}));
  EXPECT_EQ(j.bssplit[kRead][2], (BsSplitEntry{64 * KiB, 50}));
  EXPECT_EQ(j.bssplit[kWrite], j.bssplit[kRead]);
  EXPECT_EQ(j.bssplit[kTrim], j.bssplit[kRead]);
  EXPECT_EQ(j.bs_min[kRead], 4 * KiB);
  EXPECT_EQ(j.bs_max[kRead], 64 * KiB);

  // Unset (empty or 0) shares split the rest with integer division.
  j = MustParseJob("bssplit=4k/50:8k/:16k:32k/0");
  ASSERT_EQ(j.bssplit[kRead].size(), 4u);
  EXPECT_EQ(j.bssplit[kRead][0], (BsSplitEntry{8 * KiB, 16}));
  EXPECT_EQ(j.bssplit[kRead][1], (BsSplitEntry{16 * KiB, 16}));
  EXPECT_EQ(j.bssplit[kRead][2], (BsSplitEntry{32 * KiB, 16}));
  EXPECT_EQ(j.bssplit[kRead][3], (BsSplitEntry{4 * KiB, 50}));

  j = MustParseJob("bssplit=8k");
  ASSERT_EQ(j.bssplit[kRead].size(), 1u);
  EXPECT_EQ(j.bssplit[kRead][0], (BsSplitEntry{8 * KiB, 100}));
}

TEST(BsTest, BssplitPerDirection) {
  JobSpec j = MustParseJob("bssplit=4k/100,8k/30:16k/70");
  ASSERT_EQ(j.bssplit[kRead].size(), 1u);
  EXPECT_EQ(j.bssplit[kRead][0].bs, 4 * KiB);
  ASSERT_EQ(j.bssplit[kWrite].size(), 2u);
  EXPECT_EQ(j.bssplit[kWrite][0], (BsSplitEntry{8 * KiB, 30}));
  EXPECT_EQ(j.bssplit[kTrim], j.bssplit[kWrite]);
  EXPECT_EQ(j.bs_min[kWrite], 8 * KiB);
  EXPECT_EQ(j.bs_max[kWrite], 16 * KiB);
  EXPECT_EQ(j.bs_min[kRead], 4 * KiB);

  j = MustParseJob("bssplit=,8k/100,");  // write only
  EXPECT_TRUE(j.bssplit[kRead].empty());
  EXPECT_EQ(j.bssplit[kWrite].size(), 1u);
  EXPECT_TRUE(j.bssplit[kTrim].empty());
  EXPECT_EQ(j.bs_min[kRead], 4 * KiB);
  EXPECT_EQ(j.bs_min[kWrite], 8 * KiB);
}

TEST(BsTest, BssplitErrors) {
  ExpectOptionError("bssplit=4k/60:8k/50", "bssplit", "4k/60:8k/50");
  ExpectOptionError("bssplit=4k/60:8k/50:16k", "bssplit", "4k/60:8k/50:16k");
  ExpectOptionError("bssplit=4q/50", "bssplit", "4q/50");
  ExpectOptionError("bssplit=0/50", "bssplit", "0/50");
  ExpectOptionError("bssplit=4k/x", "bssplit", "4k/x");
  std::string many;
  for (int i = 0; i < 65; ++i) many += (i ? ":" : "") + std::to_string(i + 1) + "k/1";
  ExpectOptionError("bssplit=" + many, "bssplit", many);
}

// ---------------------------------------------------------------------------
// Other options.

TEST(OptionsTest, Defaults) {
  JobSpec j = MustParseJob("");
  JobSpec d;
  EXPECT_EQ(j.ioengine, "psync");
  EXPECT_EQ(j.iodepth, 1u);
  EXPECT_EQ(j.iodepth_batch_submit, 1u);
  EXPECT_EQ(j.iodepth_batch_complete_min, 1u);
  EXPECT_EQ(j.iodepth_batch_complete_max, 1u);
  EXPECT_EQ(j.iodepth_low, 1u);
  EXPECT_EQ(j.rw, RwPattern::kRead);
  EXPECT_EQ(j.rwmixread, 50u);
  EXPECT_EQ(j.nrfiles, 1u);
  EXPECT_EQ(j.numjobs, 1u);
  EXPECT_EQ(j.loops, 1u);
  EXPECT_EQ(j.randseed, 0x89u);
  EXPECT_FALSE(j.randseed_set);
  EXPECT_FALSE(j.random_generator_set);
  EXPECT_EQ(j.kb_base, 1024u);
  EXPECT_EQ(j.percentile_list.size(), 17u);
  EXPECT_EQ(j.sqthread_poll_cpu, -1);
  EXPECT_EQ(j.file_index, 1);
  // The parsed default job equals the documented defaults of the struct.
  d.name = "job";
  EXPECT_EQ(j, d);
}

TEST(OptionsTest, FilenameListWithEscapes) {
  EXPECT_THAT(MustParseJob("filename=/dev/a:/dev/b").filenames, ElementsAre("/dev/a", "/dev/b"));
  EXPECT_THAT(MustParseJob("filename=c\\:\\\\x:/d").filenames, ElementsAre("c:\\\\x", "/d"));
  EXPECT_THAT(MustParseJob("filename=/dev/a::/dev/b:").filenames, ElementsAre("/dev/a", "/dev/b"));
  EXPECT_EQ(MustParseJob("directory=/mnt/x").directory, "/mnt/x");
  EXPECT_EQ(MustParseJob("nrfiles=4").nrfiles, 4u);
  EXPECT_EQ(MustParseJob("nr_files=4").nrfiles, 4u);
}

TEST(OptionsTest, Ioengine) {
  for (const char* e : {"io_uring", "libaio", "psync", "sync", "pvsync", "pvsync2", "null"}) {
    EXPECT_EQ(MustParseJob(std::string("ioengine=") + e).ioengine, e);
  }
  ExpectOptionError("ioengine=spdk", "ioengine", "spdk");
  EXPECT_THAT(ParseError("[a]\nioengine=posixaio\n"), HasSubstr("posixaio"));
}

TEST(OptionsTest, IodepthNormalisation) {
  JobSpec j = MustParseJob("iodepth=32");
  EXPECT_EQ(j.iodepth_batch_submit, 1u);  // fio default is 1, not iodepth
  EXPECT_EQ(j.iodepth_batch_complete_min, 1u);
  EXPECT_EQ(j.iodepth_batch_complete_max, 1u);
  EXPECT_EQ(j.iodepth_low, 32u);

  j = MustParseJob("iodepth=32\niodepth_batch_submit=0\n");
  EXPECT_EQ(j.iodepth_batch_submit, 32u);
  j = MustParseJob("iodepth=32\niodepth_batch=64\n");
  EXPECT_EQ(j.iodepth_batch_submit, 32u);
  EXPECT_THAT(j.raw_options[1], Pair("iodepth_batch", "64"));  // fio's name for it
  j = MustParseJob("iodepth=32\niodepth_batch=8\n");
  EXPECT_EQ(j.iodepth_batch_submit, 8u);

  j = MustParseJob("iodepth=32\niodepth_batch_complete=4\n");
  EXPECT_EQ(j.iodepth_batch_complete_min, 4u);
  EXPECT_EQ(j.iodepth_batch_complete_max, 4u);  // defaults to min
  EXPECT_THAT(j.raw_options[1], Pair("iodepth_batch_complete_min", "4"));
  j = MustParseJob("iodepth=32\niodepth_batch_complete_min=0\n");
  EXPECT_EQ(j.iodepth_batch_complete_min, 0u);
  EXPECT_EQ(j.iodepth_batch_complete_max, 1u);
  j = MustParseJob("iodepth=32\niodepth_batch_complete_min=4\niodepth_batch_complete_max=2\n");
  EXPECT_EQ(j.iodepth_batch_complete_max, 4u);  // raised to min
  j = MustParseJob("iodepth=32\niodepth_batch_complete_max=100\n");
  EXPECT_EQ(j.iodepth_batch_complete_max, 32u);  // clamped to iodepth
  j = MustParseJob("iodepth=32\niodepth_batch_complete_max=16\n");
  EXPECT_EQ(j.iodepth_batch_complete_max, 16u);

  EXPECT_EQ(MustParseJob("iodepth=32\niodepth_low=8").iodepth_low, 8u);
  EXPECT_EQ(MustParseJob("iodepth=32\niodepth_low=0").iodepth_low, 32u);
  EXPECT_EQ(MustParseJob("iodepth=32\niodepth_low=64").iodepth_low, 32u);
  EXPECT_EQ(MustParseJob("iodepth=1k").iodepth, 1024u);  // fio allows suffixes on integers
}

TEST(OptionsTest, IodepthErrors) {
  EXPECT_EQ(ParseError("[seq]\niodepth=0\n"),
            "j.fio:2: job \"seq\": option \"iodepth\": value \"0\" must be >= 1");
  ExpectOptionError("iodepth=-1", "iodepth", "-1");
  ExpectOptionError("iodepth=abc", "iodepth", "abc");
  ExpectOptionError("iodepth=5000000000", "iodepth", "5000000000");
  ExpectOptionError("nrfiles=0", "nrfiles", "0");
}

TEST(OptionsTest, GlobalErrorsAreReportedAgainstTheJobWithTheGlobalLine) {
  const std::string msg = ParseError("[global]\niodepth=0\n[seq]\nrw=read\n");
  EXPECT_EQ(msg, "j.fio:2: job \"seq\": option \"iodepth\": value \"0\" must be >= 1");
}

TEST(OptionsTest, JobFlagsAndCounts) {
  JobSpec j = MustParseJob("numjobs=4\nthread\ngroup_reporting\nnew_group\nloops=3\nfsync=8\n");
  EXPECT_EQ(j.numjobs, 4u);
  EXPECT_TRUE(j.thread);
  EXPECT_TRUE(j.group_reporting);
  EXPECT_TRUE(j.new_group);
  EXPECT_EQ(j.loops, 3u);
  EXPECT_EQ(j.fsync, 8u);
  EXPECT_TRUE(MustParseJob("wait_for_previous").stonewall);
  EXPECT_THAT(MustParseJob("wait_for_previous").raw_options, ElementsAre(Pair("stonewall", "")));
}

TEST(OptionsTest, RwPatterns) {
  const std::pair<const char*, RwPattern> cases[] = {{"read", RwPattern::kRead},
                                                     {"write", RwPattern::kWrite},
                                                     {"trim", RwPattern::kTrim},
                                                     {"randread", RwPattern::kRandRead},
                                                     {"randwrite", RwPattern::kRandWrite},
                                                     {"randtrim", RwPattern::kRandTrim},
                                                     {"rw", RwPattern::kReadWrite},
                                                     {"readwrite", RwPattern::kReadWrite},
                                                     {"randrw", RwPattern::kRandReadWrite},
                                                     {"trimwrite", RwPattern::kTrimWrite},
                                                     {"randtrimwrite", RwPattern::kRandTrimWrite}};
  for (const auto& [name, pat] : cases) {
    EXPECT_EQ(MustParseJob(std::string("rw=") + name).rw, pat) << name;
    EXPECT_EQ(MustParseJob(std::string("readwrite=") + name).rw, pat) << name;
  }
  EXPECT_THAT(MustParseJob("readwrite=randrw").raw_options, ElementsAre(Pair("rw", "randrw")));
  ExpectOptionError("rw=sideways", "rw", "sideways");
  ExpectOptionError("rw=", "rw", "");
}

TEST(OptionsTest, RwSuffix) {
  JobSpec j = MustParseJob("rw=randread:8");
  EXPECT_EQ(j.rw, RwPattern::kRandRead);
  EXPECT_EQ(j.rw_sequencer_nr, 8u);
  EXPECT_EQ(j.rw_seq_add, 0u);
  j = MustParseJob("rw=write:4k");  // sequential: bytes of hole after each I/O
  EXPECT_EQ(j.rw, RwPattern::kWrite);
  EXPECT_EQ(j.rw_sequencer_nr, 1u);
  EXPECT_EQ(j.rw_seq_add, 4 * KiB);
  j = MustParseJob("rw=randread:8\nrw=randwrite");  // a new rw resets the suffix
  EXPECT_EQ(j.rw_sequencer_nr, 1u);
  ExpectOptionError("rw=randread:0", "rw", "randread:0");
  ExpectOptionError("rw=randread:x", "rw", "randread:x");
}

TEST(OptionsTest, RwmixLastOneWins) {
  EXPECT_EQ(MustParseJob("rwmixread=70").rwmixread, 70u);
  EXPECT_EQ(MustParseJob("rwmixwrite=30").rwmixread, 70u);
  EXPECT_EQ(MustParseJob("rwmixread=70\nrwmixwrite=10").rwmixread, 90u);
  EXPECT_EQ(MustParseJob("rwmixwrite=10\nrwmixread=70").rwmixread, 70u);
  JobList l = MustParse("[global]\nrwmixwrite=20\n[a]\n[b]\nrwmixread=10\n");
  EXPECT_EQ(l.jobs[0].rwmixread, 80u);
  EXPECT_EQ(l.jobs[1].rwmixread, 10u);
  EXPECT_EQ(MustParseJob("rwmixread=0").rwmixread, 0u);
  EXPECT_EQ(MustParseJob("rwmixwrite=100").rwmixread, 0u);
  ExpectOptionError("rwmixread=101", "rwmixread", "101");
  ExpectOptionError("rwmixwrite=101", "rwmixwrite", "101");
  ExpectOptionError("rwmixread=-5", "rwmixread", "-5");
}

TEST(OptionsTest, RandomOptions) {
  JobSpec j = MustParseJob("random_generator=lfsr\nrandseed=1234\nrandrepeat=0\nnorandommap\n");
  EXPECT_EQ(j.random_generator, RandomGenerator::kLfsr);
  EXPECT_TRUE(j.random_generator_set);
  EXPECT_EQ(j.randseed, 1234u);
  EXPECT_TRUE(j.randseed_set);
  EXPECT_FALSE(j.randrepeat);
  EXPECT_TRUE(j.norandommap);
  EXPECT_EQ(MustParseJob("random_generator=tausworthe64").random_generator,
            RandomGenerator::kTausworthe64);
  EXPECT_EQ(MustParseJob("random_generator=tausworthe").random_generator,
            RandomGenerator::kTausworthe);
  EXPECT_EQ(MustParseJob("randseed=0x10").randseed, 16u);
  ExpectOptionError("random_generator=mt19937", "random_generator", "mt19937");
  ExpectOptionError("randseed=x", "randseed", "x");
}

TEST(OptionsTest, CpuOptions) {
  JobSpec j = MustParseJob("cpus_allowed=0,5,8-11\ncpus_allowed_policy=split\n");
  EXPECT_THAT(j.cpus_allowed, ElementsAre(0, 5, 8, 9, 10, 11));
  EXPECT_EQ(j.cpus_allowed_policy, CpusAllowedPolicy::kSplit);
  EXPECT_EQ(MustParseJob("").cpus_allowed_policy, CpusAllowedPolicy::kShared);
  EXPECT_THAT(MustParseJob("cpumask=0x13").cpus_allowed, ElementsAre(0, 1, 4));
  EXPECT_THAT(MustParseJob("cpumask=6").cpus_allowed, ElementsAre(1, 2));
  EXPECT_THAT(MustParseJob("cpumask=3\ncpus_allowed=7").cpus_allowed, ElementsAre(7));
  ExpectOptionError("cpus_allowed=0-", "cpus_allowed", "0-");
  ExpectOptionError("cpus_allowed=a", "cpus_allowed", "a");
  ExpectOptionError("cpus_allowed=4-2", "cpus_allowed", "4-2");
  ExpectOptionError("cpus_allowed=1,,2", "cpus_allowed", "1,,2");
  ExpectOptionError("cpumask=0", "cpumask", "0");
  ExpectOptionError("cpumask=zz", "cpumask", "zz");
  ExpectOptionError("cpus_allowed_policy=spread", "cpus_allowed_policy", "spread");
}

TEST(OptionsTest, ParseCpuList) {
  EXPECT_THAT(*ParseCpuList("0,5,8-15"), ElementsAre(0, 5, 8, 9, 10, 11, 12, 13, 14, 15));
  EXPECT_THAT(*ParseCpuList("3,1,1,2"), ElementsAre(1, 2, 3));
  EXPECT_THAT(*ParseCpuList(" 2 - 3 , 0 "), ElementsAre(0, 2, 3));
  for (const char* bad : {"", "-1", "1-", "x", "3-1", "1,", "99999999"}) {
    EXPECT_FALSE(ParseCpuList(bad).ok()) << bad;
  }
}

TEST(OptionsTest, Numa) {
  JobSpec j = MustParseJob("numa_cpu_nodes=0-1\nnuma_mem_policy=bind:0-1\n");
  EXPECT_THAT(j.numa_cpu_nodes, ElementsAre(0, 1));
  EXPECT_EQ(j.numa_mem_policy, "bind:0-1");
  for (const char* ok : {"default", "local", "prefer:1", "bind:0,2", "interleave", "interleave:0-3",
                         "interleave:all"}) {
    EXPECT_EQ(MustParseJob(std::string("numa_mem_policy=") + ok).numa_mem_policy, ok);
  }
  for (const char* bad :
       {"prefer", "prefer:0-1", "bind", "local:0", "default:1", "bind:x", "random"}) {
    ExpectOptionError(std::string("numa_mem_policy=") + bad, "numa_mem_policy", bad);
  }
  ExpectOptionError("numa_cpu_nodes=x", "numa_cpu_nodes", "x");
}

TEST(OptionsTest, IoUringFlags) {
  JobSpec j = MustParseJob(
      "ioengine=io_uring\nhipri\nfixedbufs\nregisterfiles\nsqthread_poll\nsqthread_poll_cpu=3\n");
  EXPECT_TRUE(j.hipri);
  EXPECT_TRUE(j.fixedbufs);
  EXPECT_TRUE(j.registerfiles);
  EXPECT_TRUE(j.sqthread_poll);
  EXPECT_EQ(j.sqthread_poll_cpu, 3);
  EXPECT_THAT(ParseError("[job]\nioengine=io_uring\nsqthread_poll_cpu=-2\n"),
              HasSubstr("option \"sqthread_poll_cpu\": value \"-2\""));
}

TEST(ParserTest, IoUringCmdAndCmdType) {
  JobSpec j = MustParseJob("ioengine=io_uring_cmd\ncmd_type=nvme\nfilename=/dev/ng0n1\n");
  EXPECT_EQ(j.ioengine, "io_uring_cmd");
  EXPECT_EQ(j.cmd_type, "nvme");
  EXPECT_EQ(MustParseJob("ioengine=io_uring_cmd\n").cmd_type, "nvme");  // fio's default
  ExpectOptionError("cmd_type=scsi", "cmd_type", "scsi");
}

// fio's libaio engine option: a boolean, default 0, and (fio: "unrecognized
// option") not accepted with another engine.
TEST(OptionsTest, UserspaceReapIsALibaioOption) {
  EXPECT_FALSE(MustParseJob("ioengine=libaio\n").userspace_reap);
  EXPECT_TRUE(MustParseJob("ioengine=libaio\nuserspace_reap\n").userspace_reap);
  EXPECT_FALSE(MustParseJob("ioengine=libaio\nuserspace_reap=0\n").userspace_reap);
  ExpectOptionError("userspace_reap=1", "userspace_reap", "1");
  EXPECT_THAT(ParseError("[job]\nioengine=io_uring\nuserspace_reap=1\n"),
              HasSubstr("belongs to ioengine libaio"));
}

TEST(OptionsTest, Percentiles) {
  JobSpec j = MustParseJob("percentile_list=50:99:99.9:100\nlat_percentiles=1\n");
  EXPECT_THAT(j.percentile_list, ElementsAre(50, 99, 99.9, 100));
  EXPECT_TRUE(j.lat_percentiles);
  EXPECT_TRUE(j.clat_percentiles);
  EXPECT_FALSE(j.slat_percentiles);
  ExpectOptionError("percentile_list=0:50", "percentile_list", "0:50");
  ExpectOptionError("percentile_list=50:100.5", "percentile_list", "50:100.5");
  ExpectOptionError("percentile_list=50:x", "percentile_list", "50:x");
  ExpectOptionError("percentile_list=50::60", "percentile_list", "50::60");
  std::string twenty, twentyone;
  for (int i = 1; i <= 21; ++i) {
    if (i <= 20) twenty += (i > 1 ? ":" : "") + std::to_string(i);
    twentyone += (i > 1 ? ":" : "") + std::to_string(i);
  }
  EXPECT_EQ(MustParseJob("percentile_list=" + twenty).percentile_list.size(), 20u);
  ExpectOptionError("percentile_list=" + twentyone, "percentile_list", twentyone);
}

TEST(OptionsTest, ReportingAndMisc) {
  EXPECT_EQ(MustParseJob("unified_rw_reporting=mixed").unified_rw_reporting, UnifiedRw::kMixed);
  EXPECT_EQ(MustParseJob("unified_rw_reporting=both").unified_rw_reporting, UnifiedRw::kBoth);
  EXPECT_EQ(MustParseJob("unified_rw_reporting=none").unified_rw_reporting, UnifiedRw::kNone);
  EXPECT_EQ(MustParseJob("unified_rw_reporting=1").unified_rw_reporting, UnifiedRw::kMixed);
  EXPECT_EQ(MustParseJob("unified_rw_reporting=0").unified_rw_reporting, UnifiedRw::kNone);
  ExpectOptionError("unified_rw_reporting=2", "unified_rw_reporting", "2");
  ExpectOptionError("kb_base=1001", "kb_base", "1001");
  JobSpec j = MustParseJob("end_fsync\ninvalidate=0\nbs_unaligned\n");
  EXPECT_TRUE(j.end_fsync);
  EXPECT_FALSE(j.invalidate);
  EXPECT_TRUE(j.bs_unaligned);
  JobSpec d = MustParseJob("description=Sequential read; all files\n");
  EXPECT_THAT(d.raw_options, ElementsAre(Pair("description", "Sequential read")));
}

TEST(OptionsTest, WaitFor) {
  JobList l = MustParse("[a]\n[b]\nwait_for=a\n");
  EXPECT_EQ(l.jobs[1].wait_for, "a");
  EXPECT_EQ(ParseError("[a]\nwait_for=b\n[b]\n"),
            "j.fio:2: job \"a\": option \"wait_for\": value \"b\" does not name an earlier job");
  EXPECT_THAT(ParseError("[a]\nwait_for=a\n"), HasSubstr("does not name an earlier job"));
  EXPECT_THAT(ParseError("[a]\n[b]\nwait_for=zzz\n"), HasSubstr("value \"zzz\""));
}

TEST(OptionsTest, KnownOptionNamesIncludesAliases) {
  const std::vector<std::string> names = KnownOptionNames();
  for (const char* n : {"bs", "blocksize", "rw", "readwrite", "runtime", "timeout", "iodepth_batch",
                        "iodepth_batch_submit", "wait_for_previous", "io_limit", "blocksize_range",
                        "description", "cpumask"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
  }
}

// ---------------------------------------------------------------------------
// Command line.

TEST(CommandLineTest, NameStartsJobsAndGlobalSections) {
  CommandLine cmd;
  cmd.options = {{"bs", "8k"},      {"name", "a"}, {"rw", "randread"}, {"name", "global"},
                 {"iodepth", "16"}, {"name", "b"}, {"--thread", ""}};
  auto l = ParseCommandLine(cmd, ParseOptions{&kNoEnv, ""});
  ASSERT_TRUE(l.ok()) << l.status();
  ASSERT_EQ(l->jobs.size(), 2u);
  EXPECT_EQ(l->jobs[0].name, "a");
  EXPECT_EQ(l->jobs[0].bs[kRead], 8 * KiB);
  EXPECT_EQ(l->jobs[0].iodepth, 1u);  // the later global does not reach back
  EXPECT_EQ(l->jobs[0].file_index, 0);
  EXPECT_EQ(l->jobs[1].iodepth, 16u);
  EXPECT_TRUE(l->jobs[1].thread);
  EXPECT_EQ(l->jobs[1].rw, RwPattern::kRead);
  EXPECT_THAT(l->jobs[0].raw_options, ElementsAre(Pair("rw", "randread")));
  EXPECT_THAT(l->global_options, ElementsAre(Pair("bs", "8k"), Pair("iodepth", "16")));
}

TEST(CommandLineTest, ErrorsNameJobAndOption) {
  CommandLine cmd;
  cmd.options = {{"name", "x"}, {"iodepth", "0"}};
  auto l = ParseCommandLine(cmd, ParseOptions{&kNoEnv, ""});
  ASSERT_FALSE(l.ok());
  EXPECT_EQ(l.status().message(),
            "command line: job \"x\": option \"iodepth\": value \"0\" must be >= 1");
  cmd.options = {{"name", "x"}, {"bogus", "1"}};
  l = ParseCommandLine(cmd, ParseOptions{&kNoEnv, ""});
  ASSERT_FALSE(l.ok());
  EXPECT_THAT(std::string(l.status().message()), HasSubstr("unknown option \"bogus\""));
  EXPECT_FALSE(ParseCommandLine(CommandLine{}, ParseOptions{&kNoEnv, ""}).ok());  // no jobs
  EXPECT_FALSE(ParseCommandLine(CommandLine{{"/nonexistent/x.fio"}, {}}).ok());
}

TEST(CommandLineTest, GlobalDefaultsApplyToJobFilesWhichOverrideThem) {
  TempDir dir;
  const std::string f =
      dir.Write("a.fio", "[global]\niodepth=4\n[one]\n[two]\nbs=64k\nruntime=5\n");
  CommandLine cmd;
  cmd.job_files = {f};
  cmd.options = {{"bs", "8k"}, {"iodepth", "32"}, {"runtime", "60"}};
  auto l = ParseCommandLine(cmd, ParseOptions{&kNoEnv, ""});
  ASSERT_TRUE(l.ok()) << l.status();
  ASSERT_EQ(l->jobs.size(), 2u);
  EXPECT_EQ(l->jobs[0].bs[kRead], 8 * KiB);
  EXPECT_EQ(l->jobs[0].iodepth, 4u);  // file's [global] overrides the CLI default
  EXPECT_EQ(l->jobs[0].runtime_us, 60 * kSec);
  EXPECT_EQ(l->jobs[1].bs[kRead], 64 * KiB);
  EXPECT_EQ(l->jobs[1].runtime_us, 5 * kSec);
  EXPECT_EQ(l->jobs[0].file_index, 1);
  EXPECT_FALSE(l->jobs[0].stonewall);
}

TEST(CommandLineTest, MultipleFilesGetImplicitStonewallAndOwnGlobals) {
  TempDir dir;
  const std::string a = dir.Write("a.fio", "[global]\nrw=write\n[a1]\n[a2]\n");
  const std::string b = dir.Write("b.fio", "[b1]\n[b2]\n");
  const std::string c = dir.Write("c.fio", "[c1]\nstonewall=0\n");
  auto l =
      ParseCommandLine(CommandLine{{a, b, c}, {{"ioengine", "libaio"}}}, ParseOptions{&kNoEnv, ""});
  ASSERT_TRUE(l.ok()) << l.status();
  ASSERT_EQ(l->jobs.size(), 5u);
  EXPECT_FALSE(l->jobs[0].stonewall);
  EXPECT_FALSE(l->jobs[1].stonewall);
  EXPECT_TRUE(l->jobs[2].stonewall);
  EXPECT_FALSE(l->jobs[3].stonewall);
  EXPECT_FALSE(l->jobs[4].stonewall);  // an explicit stonewall=0 overrides the implicit one
  EXPECT_EQ(l->jobs[0].file_index, 1);
  EXPECT_EQ(l->jobs[2].file_index, 2);
  EXPECT_EQ(l->jobs[4].file_index, 3);
  EXPECT_EQ(l->jobs[1].rw, RwPattern::kWrite);
  EXPECT_EQ(l->jobs[2].rw, RwPattern::kRead);  // a.fio's [global] does not reach b.fio
  for (const JobSpec& j : l->jobs) EXPECT_EQ(j.ioengine, "libaio");
  EXPECT_TRUE(l->jobs[2].raw_options.empty());  // implicit stonewall is not "written"
}

TEST(CommandLineTest, CommandLineJobsComeBeforeFileJobs) {
  TempDir dir;
  const std::string a = dir.Write("a.fio", "[filejob]\nwait_for=clijob\n");
  auto l = ParseCommandLine(CommandLine{{a}, {{"name", "clijob"}}}, ParseOptions{&kNoEnv, ""});
  ASSERT_TRUE(l.ok()) << l.status();
  ASSERT_EQ(l->jobs.size(), 2u);
  EXPECT_EQ(l->jobs[0].name, "clijob");
  EXPECT_EQ(l->jobs[1].name, "filejob");
  EXPECT_FALSE(l->jobs[1].stonewall);
}

TEST(CommandLineTest, JobFileErrorsNameTheFileAndLine) {
  TempDir dir;
  const std::string a = dir.Write("bad.fio", "[x]\nrw=read\nbs=4q\n");
  auto l = ParseCommandLine(CommandLine{{a}, {}}, ParseOptions{&kNoEnv, ""});
  ASSERT_FALSE(l.ok());
  EXPECT_THAT(std::string(l.status().message()),
              HasSubstr(a + ":3: job \"x\": option \"bs\": value \"4q\""));
}

TEST(CommandLineTest, RelativeJobFileFromBaseDir) {
  TempDir dir;
  dir.Write("rel_only_here.fio", "[r]\n");
  auto l =
      ParseCommandLine(CommandLine{{"rel_only_here.fio"}, {}}, ParseOptions{&kNoEnv, dir.path()});
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(l->jobs[0].name, "r");
}

// ---------------------------------------------------------------------------
// JSON.

TEST(JsonTest, GlobalAndJobs) {
  auto l = ParseJobJson(R"({
    "global": {"ioengine": "io_uring", "iodepth": 32, "direct": true, "rwmixwrite": 30},
    "jobs": [
      {"name": "seq", "rw": "read", "bs": "128k"},
      {"name": "rand", "rw": "randrw", "rwmixread": 90, "time_based": true, "runtime": 10,
       "percentile_list": "50:99.5", "thread": false}
    ]})",
                        ParseOptions{&kNoEnv, ""});
  ASSERT_TRUE(l.ok()) << l.status();
  ASSERT_EQ(l->jobs.size(), 2u);
  EXPECT_EQ(l->jobs[0].ioengine, "io_uring");
  EXPECT_EQ(l->jobs[0].iodepth, 32u);
  EXPECT_TRUE(l->jobs[0].direct);
  EXPECT_EQ(l->jobs[0].rwmixread, 70u);
  EXPECT_EQ(l->jobs[0].bs[kRead], 128 * KiB);
  EXPECT_EQ(l->jobs[1].rwmixread, 90u);
  EXPECT_TRUE(l->jobs[1].time_based);
  EXPECT_FALSE(l->jobs[1].thread);
  EXPECT_THAT(l->jobs[1].percentile_list, ElementsAre(50, 99.5));
  EXPECT_THAT(l->global_options, ElementsAre(Pair("ioengine", "io_uring"), Pair("iodepth", "32"),
                                             Pair("direct", "1"), Pair("rwmixwrite", "30")));
  EXPECT_THAT(l->jobs[0].raw_options, ElementsAre(Pair("rw", "read"), Pair("bs", "128k")));
}

TEST(JsonTest, KeyOrderIsKeptForLastOneWins) {
  auto l = ParseJobJson(R"({"name": "x", "rwmixread": 10, "rwmixwrite": 40})");
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(l->jobs[0].rwmixread, 60u);
  l = ParseJobJson(R"({"name": "x", "rwmixwrite": 40, "rwmixread": 10})");
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(l->jobs[0].rwmixread, 10u);
}

TEST(JsonTest, FlatSingleJob) {
  auto l = ParseJobJson(R"({"name": "solo", "rw": "randwrite", "size": "1g", "numjobs": 2,
                            "percentile_list": "99.9"})");
  ASSERT_TRUE(l.ok()) << l.status();
  ASSERT_EQ(l->jobs.size(), 1u);
  EXPECT_EQ(l->jobs[0].name, "solo");
  EXPECT_EQ(l->jobs[0].size, GiB);
  EXPECT_EQ(l->jobs[0].numjobs, 2u);
  EXPECT_TRUE(l->global_options.empty());
}

TEST(JsonTest, ErrorsNameTheField) {
  auto err = [](const std::string& json) {
    auto l = ParseJobJson(json, ParseOptions{&kNoEnv, ""});
    EXPECT_FALSE(l.ok()) << json;
    EXPECT_EQ(l.status().code(), absl::StatusCode::kInvalidArgument);
    return std::string(l.status().message());
  };
  EXPECT_EQ(err(R"({"jobs": [{"name": "a"}, {"name": "b", "iodepth": 0}]})"),
            "jobs[1].iodepth: job \"b\": option \"iodepth\": value \"0\" must be >= 1");
  EXPECT_THAT(err(R"({"global": {"bs": "4q"}, "jobs": [{"name": "a"}]})"),
              HasSubstr("global.bs: job \"global\": option \"bs\": value \"4q\""));
  EXPECT_THAT(err(R"({"jobs": [{"rw": "read"}]})"), HasSubstr("jobs[0].name"));
  EXPECT_THAT(err(R"({"name": "a", "bs": [1, 2]})"), HasSubstr("job.bs"));
  EXPECT_THAT(err(R"({"name": "a", "bs": null})"), HasSubstr("job.bs"));
  EXPECT_THAT(err(R"({"name": "a", "nosuch": 1})"), HasSubstr("unknown option \"nosuch\""));
  EXPECT_THAT(err(R"({"name": "a", )"), HasSubstr("not valid JSON"));
  EXPECT_THAT(err(R"([1, 2])"), HasSubstr("object"));
  EXPECT_THAT(err(R"({"jobs": {}})"), HasSubstr("jobs"));
  EXPECT_THAT(err(R"({"jobs": [], "extra": 1})"), HasSubstr("extra"));
  EXPECT_THAT(err(R"({"jobs": []})"), HasSubstr("no jobs"));
  // What a job file cannot hold (found by the job_json fuzzer: a name with a
  // newline rendered into a broken section header).
  EXPECT_THAT(err(R"({"name": "randrad\nbs={"})"),
              HasSubstr("job.name: contains the control character 0x0a"));
  EXPECT_THAT(err(R"({"name": "a#b"})"), HasSubstr("job.name: contains '#'"));
  EXPECT_THAT(err(R"({"name": "a", "filename": "/tmp/x;y"})"),
              HasSubstr("job.filename: contains ';'"));
  EXPECT_THAT(err(R"({"name": "a", "description": "x\n[evil]"})"),
              HasSubstr("job.description: contains the control character 0x0a"));
}

// ---------------------------------------------------------------------------
// ToJobText round trip.

void ExpectRoundTrip(const JobList& in) {
  const std::string text = ToJobText(in);
  auto back = ParseJobText(text, "roundtrip", ParseOptions{&kNoEnv, ""});
  ASSERT_TRUE(back.ok()) << back.status() << "\n" << text;
  ASSERT_EQ(back->jobs.size(), in.jobs.size()) << text;
  for (size_t i = 0; i < in.jobs.size(); ++i) {
    JobSpec a = in.jobs[i], b = back->jobs[i];
    a.raw_options.clear();
    b.raw_options.clear();
    a.file_index = b.file_index = 1;
    EXPECT_TRUE(a == b) << "job " << i << " differs after round trip:\n" << text;
  }
}

TEST(ToJobTextTest, RoundTripsTypicalFile) {
  JobList l = MustParse(
      "[global]\nioengine=io_uring\niodepth=32\ndirect=1\nbs=4k\nsize=1g\nruntime=30\n"
      "time_based\ngroup_reporting\nkb_base=1000\n"
      "[seq]\nrw=read\nbs=128k\nnumjobs=2\ndescription=sequential\n"
      "[rand]\nrw=randrw:4\nrwmixwrite=30\nbssplit=4k/50:8k/:64k\nstonewall\n"
      "iodepth_batch_submit=8\niodepth_batch_complete_min=2\niodepth_low=4\n");
  const std::string text = ToJobText(l);
  EXPECT_THAT(text, HasSubstr("[global]\nkb_base=1000\nioengine=io_uring\n"));
  EXPECT_THAT(text, HasSubstr("time_based\n"));  // [global] bare flags stay bare
  EXPECT_THAT(text, HasSubstr("description=sequential\n"));
  ExpectRoundTrip(l);
  auto back = ParseJobText(text, "rt", ParseOptions{&kNoEnv, ""});
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(ToJobText(*back), text);
}

// A job named with name= so that its name would not read back as a job
// section: a name starting with "global" (a [global...] section is a global
// one, as in fio) or holding a comment character. Found by the fuzzer
// (jobspec_text_fuzz: "ToJobText output does not parse", "no jobs defined").
TEST(ToJobTextTest, RoundTripsNamesThatAreNoJobSectionHeader) {
  for (const char* text : {"[a]\nname=globalb\nsize=1m\n", "[a]\nname=global\n[b]\nsize=2m\n",
                           "[global]\nsize=1m\n[a]\nname=globalx\nrw=randread\n",
                           "[a]\nrw=read\nname=x\\;y\n"}) {
    SCOPED_TRACE(text);
    auto in = ParseJobText(text, "n.fio", ParseOptions{&kNoEnv, ""});
    if (!in.ok()) continue;  // a name the parser itself refuses
    ExpectRoundTrip(*in);
    const std::string rendered = ToJobText(*in);
    auto back = ParseJobText(rendered, "rt", ParseOptions{&kNoEnv, ""});
    ASSERT_TRUE(back.ok()) << back.status() << "\n" << rendered;
    EXPECT_EQ(back->jobs[0].name, in->jobs[0].name) << rendered;
    EXPECT_EQ(ToJobText(*back), rendered);  // a fixed point
  }
  auto in = ParseJobText("[a]\nname=globalb\nsize=1m\n", "n.fio", ParseOptions{&kNoEnv, ""});
  ASSERT_TRUE(in.ok()) << in.status();
  EXPECT_EQ(in->jobs[0].name, "globalb");
}

TEST(ToJobTextTest, RoundTripsEveryOption) {
  JobList l = MustParse(
      "[a]\nfilename=/dev/x\\:y:/dev/z\ndirectory=/mnt\nsize=50%\nfilesize=1m-2m\n"
      "io_size=10%\noffset=4k\noffset_increment=1m\nnrfiles=3\nioengine=libaio\niodepth=64\n"
      "iodepth_batch_complete_max=7\nthread\nnew_group\nrw=write:8k\nbs=4k,8k,16k\n"
      "bsrange=4k-8k\nbs_unaligned\nruntime=1500ms\nramp_time=2s\nstartdelay=1-3\nloops=2\n"
      "random_generator=tausworthe64\nrandrepeat=0\nrandseed=99\nnorandommap\n"
      "cpus_allowed=0-3,7\ncpus_allowed_policy=split\nnuma_cpu_nodes=0\n"
      "numa_mem_policy=interleave:0-1\nuserspace_reap\n"
      "percentile_list=1:50:99.995\nclat_percentiles=0\n"
      "lat_percentiles\nslat_percentiles\nunified_rw_reporting=both\nfsync=4\nend_fsync\n"
      "invalidate=0\n"
      "[b]\nwait_for=a\nbssplit=,4k/20:8k/80,\nrwmixread=0\nsize=3g\noffset=10%\n"
      "ioengine=io_uring\nhipri\nfixedbufs\nregisterfiles\nsqthread_poll\nsqthread_poll_cpu=2\n"
      "[c]\nsize=2z\noffset=1z\nrw=read:-8k\nnumjobs=0\n");
  ExpectRoundTrip(l);
}

TEST(ToJobTextTest, RoundTripsGlobalsBetweenJobsAndMultipleFiles) {
  ExpectRoundTrip(MustParse("[a]\nsize=1m\n[global]\nsize=2g\niodepth=8\n[b]\n[c]\niodepth=2\n"));
  ExpectRoundTrip(MustParse("[global]\nbsrange=1k-8k\n[a]\nbs=16k\n[b]\nbssplit=2k\n"));
  ExpectRoundTrip(MustParse("[global]\nbssplit=4k/50:8k/50\n[a]\nbs=16k\n[b]\nbssplit=2k\n"));
  ExpectRoundTrip(MustParse("[global]\ntime_based\nruntime=10\n[a]\nruntime=0\n[b]\n"));
  ExpectRoundTrip(MustParse(
      "[global]\niodepth_batch_submit=0\niodepth_low=0\n[a]\niodepth=8\n[b]\n[c]\niodepth=4\n"
      "iodepth_low=1\niodepth_batch_complete_min=4\n"));

  TempDir dir;
  const std::string a = dir.Write("a.fio", "[global]\nsize=1g\nrw=write\n[a1]\n");
  const std::string b = dir.Write("b.fio", "[b1]\n[b2]\nwait_for=a1\n");
  auto l = ParseCommandLine(CommandLine{{a, b}, {{"bs", "8k"}}}, ParseOptions{&kNoEnv, ""});
  ASSERT_TRUE(l.ok()) << l.status();
  ExpectRoundTrip(*l);
}

// Found by jobspec_text_fuzz: two [global] sections whose options fio applies in
// another order than written (filename last) must render to a fixed point.
TEST(ToJobTextTest, SeveralGlobalSectionsRenderToAFixedPoint) {
  JobList l = MustParse(
      "[global]\ndirectory=/a\nfilename=f\n[global]\ndirectory=/b\nnrfiles=5\n[j]\nrw=write\n");
  const std::string once = ToJobText(l);
  auto back = ParseJobText(once, "rt", ParseOptions{&kNoEnv, ""});
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(ToJobText(*back), once);
  ExpectRoundTrip(l);
}

// Found by jobspec_text_fuzz: a file name that starts or ends with white space
// (fio keeps names as written) survives rendering.
TEST(ToJobTextTest, FileNamesWithOuterWhiteSpaceRoundTrip) {
  JobList l = MustParse("[a]\nfilename=:\fx.dat: y :\n");
  EXPECT_THAT(l.jobs[0].filenames, ElementsAre("\fx.dat", " y "));
  const std::string once = ToJobText(l);
  ExpectRoundTrip(l);
  auto back = ParseJobText(once, "rt", ParseOptions{&kNoEnv, ""});
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(ToJobText(*back), once);
}

TEST(ToJobTextTest, RendersOptionsAsWrittenElseWhatDiffersFromTheTemplate) {
  // As written, so the agent's JSON "job options" echo what the user wrote (as
  // fio's do: bs=8k, not 8192; runtime=1, not 1000000us).
  EXPECT_EQ(ToJobText(MustParse("[a]\nbs=8k\nrw=randread:4\n")), "[a]\nbs=8k\nrw=randread:4\n");
  EXPECT_EQ(ToJobText(MustParse("[global]\niodepth=8\n[a]\n[b]\nbs=8k,16k\nruntime=1\n")),
            "[global]\niodepth=8\n\n[a]\n\n[b]\nbs=8k,16k\nruntime=1\n");
  // A job section's bare flags are set explicitly: fio's echo lists none there,
  // and the arm audit reads what ran from the echo.
  EXPECT_EQ(ToJobText(MustParse("[global]\ngroup_reporting\n[a]\ntime_based\nruntime=1\n")),
            "[global]\ngroup_reporting\n\n[a]\ntime_based=1\nruntime=1\n");
  // A job changed in code (its options as written no longer describe it): only
  // what differs from the [global] template is rendered.
  JobList changed = MustParse("[global]\niodepth=8\n[a]\nbs=8k\nrw=randread:4\n");
  changed.jobs[0].numjobs = 3;
  EXPECT_EQ(ToJobText(changed),
            "[global]\niodepth=8\n\n[a]\nnumjobs=3\nrw=randread:4\nbs=8192\n");
  // A stonewall implied between job files is written out explicitly.
  TempDir dir;
  const std::string a = dir.Write("a.fio", "[a1]\n");
  const std::string b = dir.Write("b.fio", "[b1]\n");
  auto l = ParseCommandLine(CommandLine{{a, b}, {}}, ParseOptions{&kNoEnv, ""});
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(ToJobText(*l), "[a1]\n\n[b1]\nstonewall=1\n");
}

TEST(ToJobTextTest, RoundTripsJson) {
  auto l = ParseJobJson(
      R"({"global": {"bs": "8k", "rw": "randread"}, "jobs": [{"name": "x", "iodepth": 4}]})");
  ASSERT_TRUE(l.ok()) << l.status();
  ExpectRoundTrip(*l);
}

// ---------------------------------------------------------------------------
// ValidateJobSpec on specs built in code.

TEST(ValidateTest, ProgrammaticSpecs) {
  JobSpec s;
  s.name = "p";
  EXPECT_TRUE(ValidateJobSpec(s).ok());

  JobSpec bad = s;
  bad.iodepth = 0;
  EXPECT_EQ(ValidateJobSpec(bad).message(),
            "job \"p\": option \"iodepth\": value \"0\" must be >= 1");
  bad = s;
  bad.bs[kWrite] = 0;
  EXPECT_THAT(std::string(ValidateJobSpec(bad).message()), HasSubstr("option \"bs\""));
  bad = s;
  bad.iodepth = 4;
  bad.iodepth_batch_submit = 8;
  EXPECT_THAT(std::string(ValidateJobSpec(bad).message()),
              HasSubstr("option \"iodepth_batch\": value \"8\""));
  bad = s;
  bad.rwmixread = 150;
  EXPECT_THAT(std::string(ValidateJobSpec(bad).message()), HasSubstr("rwmixread"));
  bad = s;
  bad.percentile_list = {0.0};
  EXPECT_THAT(std::string(ValidateJobSpec(bad).message()), HasSubstr("percentile_list"));
  bad = s;
  bad.ioengine = "windowsaio";
  EXPECT_THAT(std::string(ValidateJobSpec(bad).message()), HasSubstr("windowsaio"));
  bad = s;
  bad.time_based = true;
  EXPECT_FALSE(ValidateJobSpec(bad).ok());
  bad = s;
  bad.bs_min[kRead] = 8192;
  EXPECT_THAT(std::string(ValidateJobSpec(bad).message()), HasSubstr("bsrange"));
  bad = s;
  bad.nrfiles = 0;
  EXPECT_THAT(std::string(ValidateJobSpec(bad).message()), HasSubstr("nrfiles"));
  bad = s;
  bad.hipri = true;  // an engine option on an engine that does not own it
  EXPECT_THAT(std::string(ValidateJobSpec(bad).message()),
              HasSubstr("option \"hipri\": value \"1\": belongs to ioengine"));
  bad.ioengine = "io_uring";
  EXPECT_TRUE(ValidateJobSpec(bad).ok());
  bad = s;
  bad.numa_mem_policy = "bind";
  EXPECT_THAT(std::string(ValidateJobSpec(bad).message()), HasSubstr("numa_mem_policy"));
  bad = s;
  bad.name = "";
  EXPECT_FALSE(ValidateJobSpec(bad).ok());

  JobList list;
  list.jobs = {s, s};
  list.jobs[1].name = "q";
  list.jobs[1].wait_for = "p";
  EXPECT_TRUE(ValidateJobList(list).ok());
  list.jobs[0].wait_for = "q";
  EXPECT_THAT(std::string(ValidateJobList(list).message()),
              HasSubstr("job \"p\": option \"wait_for\": value \"q\""));
}

TEST(ValidateTest, ParsedJobsAlwaysValidate) {
  JobList l = MustParse(
      "[global]\niodepth=16\niodepth_batch=0\n[a]\nbsrange=4k-1m\n[b]\nbssplit=4k:8k:16k\n");
  EXPECT_TRUE(ValidateJobList(l).ok());
}

}  // namespace
}  // namespace iofleet::jobspec

// ---------------------------------------------------------------------------
// Grammar fio 3.33 accepts that iofleet used to misread. Each case was checked
// with `fio --parse-only` (and, where noted, a short real run of fio 3.33).

namespace iofleet::jobspec {
namespace {

TEST(FioGrammarTest, SequentialRwOffsetModifiersMayBeNegativeOrSigned) {
  // examples/backwards-read.fio: rw=read:-8k reads backwards (fio: str_to_decimal).
  JobSpec j = MustParseJob("rw=read:-8k");
  EXPECT_EQ(j.rw, RwPattern::kRead);
  EXPECT_EQ(j.rw_seq_add, -8 * static_cast<int64_t>(KiB));
  EXPECT_EQ(MustParseJob("rw=write:+4k").rw_seq_add, 4 * static_cast<int64_t>(KiB));
  EXPECT_EQ(MustParseJob("rw=read:1m").rw_seq_add, static_cast<int64_t>(MiB));
  // Renders and parses back.
  EXPECT_EQ(ToJobText(MustParse("[a]\nrw=read:-8k\n")), "[a]\nrw=read:-8k\n");
  // It runs (agent/run/jobfeat_run_test.cc checks the offsets against fio's).
  EXPECT_TRUE(CheckRunnable(MustParse("[a]\nrw=read:-8k\n")).ok());
  ExpectOptionError("rw=read:-x", "rw", "read:-x");
}

TEST(FioGrammarTest, RandomRwModifierIsReadLikeAtoi) {
  // fio reads the random ':N' with atoi: "+8k" is 8 I/Os per offset, not 8192.
  EXPECT_EQ(MustParseJob("rw=randread:+8k").rw_sequencer_nr, 8u);
  EXPECT_EQ(MustParseJob("rw=randread:8k").rw_sequencer_nr, 8u);
  EXPECT_EQ(MustParseJob("rw=randrw:16").rw_sequencer_nr, 16u);
  ExpectOptionError("rw=randread:-8", "rw", "randread:-8");
}

TEST(FioGrammarTest, OffsetPercentIncludingZero) {
  // fio: offset=0% is offset 0 (a percentage of 0 is not "no offset" but 0).
  EXPECT_EQ(MustParseJob("offset=50%").offset_percent, 50);
  JobSpec z = MustParseJob("offset=0%");
  EXPECT_EQ(z.offset, 0u);
  EXPECT_EQ(z.offset_percent, 0);
  EXPECT_EQ(MustParseJob("offset_increment=25%").offset_increment_percent, 25);
  ExpectOptionError("size=0%", "size", "0%");
  ExpectOptionError("offset=101%", "offset", "101%");
}

TEST(FioGrammarTest, ZoneSuffixCountsZones) {
  // fio's FIO_OPT_STR_VAL_ZONE options (size, io_size, offset, offset_increment)
  // take "Nz": N zones, resolved against the zone size of zonemode=zbd/strided.
  JobSpec j = MustParseJob("offset=2z\nsize=4z\nio_size=8z\noffset_increment=1z\n");
  EXPECT_EQ(j.offset_zones, 2u);
  EXPECT_EQ(j.size_zones, 4u);
  EXPECT_EQ(j.io_size_zones, 8u);
  EXPECT_EQ(j.offset_increment_zones, 1u);
  EXPECT_EQ(j.offset, 0u);
  // A later byte value replaces it.
  EXPECT_EQ(MustParseJob("offset=2z\noffset=4k\n").offset_zones, 0u);
  ExpectRoundTrip(MustParse("[a]\noffset=2z\nsize=4z\n"));
  // 'z' only applies to those options (fio: "'z' suffix isn't applicable").
  ExpectOptionError("bs=2z", "bs", "2z");
  // Without zones (iofleet has none yet) it does not run: fio would silently use 0.
  EXPECT_THAT(std::string(CheckRunnable(MustParse("[a]\noffset=2z\n")).message()),
              HasSubstr("option \"offset\": value \"2z\": a size in zones needs zonemode"));
}

TEST(FioGrammarTest, ZonesResolveAgainstZonesizeWithZonemode) {
  // With zonemode=zbd (or strided) and a zonesize, sizes in zones become bytes
  // (fio's zbd_recalc_options_with_zone_granularity) and the job runs.
  JobSpec j = MustParseJob("zonemode=zbd\nzonesize=1m\noffset=2z\nsize=4z\nzoneskip=1z\n");
  EXPECT_EQ(j.zone_mode, ZoneMode::kZbd);
  EXPECT_EQ(j.offset, 2u << 20);
  EXPECT_EQ(j.size, 4u << 20);
  EXPECT_EQ(j.zone_skip, 1u << 20);
  EXPECT_EQ(j.offset_zones, 0u);
  EXPECT_TRUE(CheckRunnable(MustParse("[a]\nzonemode=zbd\nzonesize=1m\noffset=2z\n")).ok());
  ExpectRoundTrip(MustParse("[a]\nzonemode=zbd\nzonesize=1m\noffset=2z\nsize=4z\n"));
}

TEST(FioGrammarTest, ZoneOptionsParseAndBadValuesNameTheOption) {
  JobSpec j = MustParseJob(
      "zonemode=zbd\nzonesize=256m\nzonecapacity=200m\nread_beyond_wp=1\nmax_open_zones=32\n"
      "job_max_open_zones=4\nignore_zone_limits=1\nzone_reset_threshold=0.7\n"
      "zone_reset_frequency=0.1\n");
  EXPECT_EQ(j.zone_size, 256u << 20);
  EXPECT_EQ(j.zone_capacity, 200u << 20);
  EXPECT_TRUE(j.read_beyond_wp);
  EXPECT_EQ(j.max_open_zones, 32u);
  EXPECT_EQ(j.job_max_open_zones, 4u);
  EXPECT_TRUE(j.ignore_zone_limits);
  EXPECT_DOUBLE_EQ(j.zone_reset_threshold, 0.7);
  EXPECT_DOUBLE_EQ(j.zone_reset_frequency, 0.1);
  ExpectOptionError("zonemode=zoned", "zonemode", "zoned");
  ExpectOptionError("zone_reset_threshold=1.5", "zone_reset_threshold", "1.5");
  ExpectOptionError("max_open_zones=5000", "max_open_zones", "5000");
  auto l = ParseJobText("[a]\nzonemode=zbd\nzonesize=1m\nzonecapacity=2m\n", "t.fio");
  ASSERT_FALSE(l.ok());
  EXPECT_THAT(std::string(l.status().message()), HasSubstr("zonecapacity 2097152 is larger than zonesize"));
  // Strided zones run for sequential and uniform random I/O on one file; a
  // random_distribution or rw=randread:N with them is refused naming the option.
  EXPECT_TRUE(CheckRunnable(MustParse("[a]\nzonemode=strided\nzonesize=1m\n")).ok());
  EXPECT_TRUE(CheckRunnable(MustParse("[a]\nrw=randread\nzonemode=strided\nzonesize=1m\n")).ok());
  EXPECT_THAT(std::string(CheckRunnable(MustParse("[a]\nrw=randread\nrandom_distribution=zipf:1.2\n"
                                                  "zonemode=strided\nzonesize=1m\n")).message()),
              HasSubstr("option \"zonemode\": value \"strided\": strided zones with a random_distribution"));
  EXPECT_THAT(std::string(CheckRunnable(MustParse("[a]\nrw=randread:4\nzonemode=strided\nzonesize=1m\n")).message()),
              HasSubstr("option \"zonemode\": value \"strided\": strided zones with rw=...:N"));
  // fio: a zonesize without zonemode means strided zones (never silently
  // ignored), and an explicit zonemode=none with a zonesize is refused.
  JobSpec implied = MustParseJob("zonesize=16k\nzonerange=64k\n");
  EXPECT_EQ(implied.zone_mode, ZoneMode::kStrided);
  EXPECT_EQ(implied.zone_size, 16u << 10);
  EXPECT_EQ(MustParseJob("zonesize=16k\n").zone_range, 16u << 10);
  auto none = ParseJobText("[a]\nzonemode=none\nzonesize=16k\n", "t.fio");
  ASSERT_FALSE(none.ok());
  EXPECT_THAT(std::string(none.status().message()),
              HasSubstr("zonesize 16384 is not compatible with zonemode=none"));
}

TEST(FioGrammarTest, PercentileListEntryEndsAtAComma) {
  // fio 3.33 splits percentile_list on ':' only and reads each entry with strtod,
  // so a ',' ends the entry: "50,99" reports only p50 and "50:99,99.9:99.99"
  // reports p50, p99, p99.99 (checked with a real fio run's JSON).
  EXPECT_THAT(MustParseJob("percentile_list=50,99").percentile_list, ElementsAre(50));
  EXPECT_THAT(MustParseJob("percentile_list=50:99,99.9:99.99").percentile_list,
              ElementsAre(50, 99, 99.99));
  ExpectOptionError("percentile_list=x,50", "percentile_list", "x,50");
}

TEST(FioGrammarTest, LoopsZeroRunsOnce) {
  // fio: td->loops = o->loops ? o->loops : 1 (a real run with loops=0 does one pass).
  JobSpec j = MustParseJob("loops=0");
  EXPECT_EQ(j.loops, 1u);
  j.raw_options.clear();
  EXPECT_EQ(j, MustParseJob(""));
  EXPECT_TRUE(CheckRunnable(MustParse("[a]\nloops=0\n")).ok());
}

TEST(FioGrammarTest, NumjobsZeroParsesButDoesNotRun) {
  // fio --parse-only accepts numjobs=0; a real fio run then clones the job until
  // "maximum number of jobs reached" and fails. iofleet parses it and refuses to
  // run it, before any I/O, with that reason.
  JobList l = MustParse("[a]\nnumjobs=0\n");
  EXPECT_EQ(l.jobs[0].numjobs, 0u);
  EXPECT_TRUE(ValidateJobList(l).ok());
  ExpectRoundTrip(l);
  EXPECT_THAT(std::string(CheckRunnable(l).message()),
              HasSubstr("job \"a\": option \"numjobs\": value \"0\": fio accepts it when parsing"));
  EXPECT_TRUE(CheckRunnable(MustParse("[a]\nnumjobs=2\n")).ok());
}

TEST(FioGrammarTest, JobOptionsEchoUsesFioNamesAndOrder) {
  // fio's JSON "job options" (checked against fio 3.33): canonical names
  // (iodepth_batch_submit -> iodepth_batch, blocksize -> bs, timeout -> runtime),
  // values as written, kb_base first, filename last, engine options after all.
  JobSpec j = MustParseJob(
      "filename=/tmp/zz\nhipri=0\nsize=1m\nioengine=io_uring\nkb_base=1000\nrw=read\n"
      "iodepth_batch_submit=8\nblocksize=4k\ntimeout=1\n");
  EXPECT_THAT(j.raw_options,
              ElementsAre(Pair("kb_base", "1000"), Pair("size", "1m"), Pair("ioengine", "io_uring"),
                          Pair("rw", "read"), Pair("iodepth_batch", "8"), Pair("bs", "4k"),
                          Pair("runtime", "1"), Pair("filename", "/tmp/zz"), Pair("hipri", "0")));
}

TEST(OverrideTest, OverridesApplyToOptionsAsWrittenThenFixupOnce) {
  // A variant's iodepth_batch=8 with the sweep's iodepth=32 on a job without
  // iodepth: applied together, nothing is clamped to the base job's iodepth=1.
  ParseOptions o;
  o.env = &kNoEnv;
  o.overrides = {{"iodepth_batch_submit", "8", "variants[1].options"},
                 {"iodepth_batch_complete_min", "8", "variants[1].options"},
                 {"iodepth", "32", "sweep"}};
  std::vector<Normalisation> notes;
  o.normalised = &notes;
  auto l = ParseJobText("[global]\nioengine=libaio\n[a]\nrw=randread\n[b]\niodepth=4\n", "j", o);
  ASSERT_TRUE(l.ok()) << l.status();
  for (const JobSpec& j : l->jobs) {
    EXPECT_EQ(j.iodepth, 32u);
    EXPECT_EQ(j.iodepth_batch_submit, 8u);
    EXPECT_EQ(j.iodepth_batch_complete_min, 8u);
  }
  EXPECT_TRUE(notes.empty());
  // Later overrides win; a clamp by the job's own rules is reported, not hidden.
  o.overrides = {{"iodepth_batch", "8", "variants[1].options"}, {"iodepth", "4", "sweep"}};
  l = ParseJobText("[a]\n", "j", o);
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->jobs[0].iodepth_batch_submit, 4u);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0], (Normalisation{"a", "iodepth_batch", "8", "4", "clamped to iodepth (4)"}));
  // Errors name the override's source.
  o.overrides = {{"rw", "sideways", "variants[0].options"}};
  auto bad = ParseJobText("[a]\n", "j", o);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()),
              HasSubstr("variants[0].options: job \"a\": option \"rw\": value \"sideways\""));
  o.overrides = {{"frobnicate", "1", "sweep"}};
  EXPECT_THAT(std::string(ParseJobText("[a]\n", "j", o).status().message()),
              HasSubstr("sweep: job \"*\": unknown option \"frobnicate\""));
}

TEST(EffectiveOptionsTest, SameJobWrittenDifferentlyGivesTheSameOptions) {
  JobSpec a = MustParseJob("bs=4k\nreadwrite=randread\niodepth=8\nblocksize_range=4k-4k\n");
  JobSpec b = MustParseJob("blocksize=4096\nrw=randread\niodepth=0x8\n");
  EXPECT_EQ(EffectiveOptions(a), EffectiveOptions(b));
  EXPECT_THAT(EffectiveOptions(a), ElementsAre(Pair("rw", "randread"), Pair("iodepth", "8")));
  EXPECT_THAT(EffectiveOptions(MustParseJob("iodepth=16\niodepth_batch_submit=8")),
              ::testing::Contains(Pair("iodepth_batch", "8")));
}


// fdatasync=N and sync_file_range=flags:N run where fio 3.33 does them:
// refused on io_uring_cmd (fio fails its first one, ENOTSUP) and
// sync_file_range on io_uring (fio's ring operation is refused by the kernel,
// EINVAL, and fio drops the error: nothing is synced), naming the option
// and its value.
TEST(FioGrammarTest, FdatasyncAndSyncFileRangeRefusedWhereFioDoesNone) {
  for (const char* engine : {"psync", "sync", "pvsync", "pvsync2", "libaio", "io_uring", "null"}) {
    SCOPED_TRACE(engine);
    EXPECT_TRUE(CheckRunnable(MustParse(absl::StrCat("[a]\nrw=write\nioengine=", engine, "\nfdatasync=8\n"))).ok());
    EXPECT_TRUE(CheckRunnable(MustParse(absl::StrCat("[a]\nrw=write\nioengine=", engine, "\nsync=dsync\n"))).ok());
  }
  for (const char* engine : {"psync", "sync", "pvsync", "pvsync2", "libaio", "null"}) {
    SCOPED_TRACE(engine);
    EXPECT_TRUE(CheckRunnable(MustParse(absl::StrCat("[a]\nrw=write\nioengine=", engine,
                                                     "\nsync_file_range=wait_before,write:8\n"))).ok());
  }
  EXPECT_THAT(std::string(CheckRunnable(MustParse("[a]\nrw=write\nioengine=io_uring\nsync_file_range=write:8\n")).message()),
              HasSubstr("option \"sync_file_range\": value \"write:8\": fio 3.33 syncs nothing with it on ioengine=io_uring"));
  EXPECT_THAT(std::string(CheckRunnable(MustParse("[a]\nrw=write\nioengine=io_uring_cmd\nfdatasync=4\n")).message()),
              HasSubstr("option \"fdatasync\": value \"4\": ioengine=io_uring_cmd has no fdatasync"));
  EXPECT_THAT(
      std::string(CheckRunnable(MustParse("[a]\nrw=write\nioengine=io_uring_cmd\nsync_file_range=wait_before,write,wait_after:2\n")).message()),
      HasSubstr("option \"sync_file_range\": value \"wait_before,write,wait_after:2\": ioengine=io_uring_cmd"));
  // fsync=N stays runnable on both (io_uring_cmd: an NVMe Flush).
  EXPECT_TRUE(CheckRunnable(MustParse("[a]\nrw=write\nioengine=io_uring_cmd\nfsync=4\n")).ok());
}

}  // namespace
}  // namespace iofleet::jobspec
