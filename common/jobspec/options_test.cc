// The option table against fio 3.33 (its --cmdhelp=all and --enghelp lists,
// checked in under testdata/) and against itself: every row parses, renders
// and refuses as it says.
#include "common/jobspec/options.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/jobspec/parser.h"

namespace iofleet::jobspec {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

const std::map<std::string, std::string> kNoEnv;

ParseOptions Opts() {
  ParseOptions o;
  o.env = &kNoEnv;
  o.allow_include = false;
  return o;
}

std::vector<std::string> DataLines(const std::string& name) {
  std::ifstream in(std::string(IOFLEET_SOURCE_DIR) + "/common/jobspec/testdata/" + name);
  EXPECT_TRUE(in.good()) << name;
  std::vector<std::string> out;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line[0] != '#') out.push_back(line);
  }
  return out;
}

// The first engine iofleet supports among the row's owners ("" for generic rows).
std::string EngineFor(const OptionRow& row) {
  for (const std::string& e : RowEngines(row)) {
    if (IsSupportedEngine(e)) return e;
  }
  return "";
}

// A job file setting `name=value` in job "a" (after a job "first", so wait_for
// has something to name), with the row's companions and engine.
std::string JobWith(const OptionRow& row, const std::string& line) {
  std::string text = "[first]\n[a]\n";
  if (const std::string e = EngineFor(row); !e.empty() && std::string(row.name) != "ioengine") {
    absl::StrAppend(&text, "ioengine=", e, "\n");
  }
  for (absl::string_view kv : absl::StrSplit(row.example_with, ' ', absl::SkipEmpty())) {
    absl::StrAppend(&text, kv, "\n");
  }
  absl::StrAppend(&text, line, "\n");
  return text;
}

JobSpec Comparable(JobSpec s) {
  s.raw_options.clear();
  s.file_index = 1;
  return s;
}

TEST(OptionTableTest, EveryFioCmdhelpOptionIsARow) {
  const std::vector<std::string> names = DataLines("fio-3.33-cmdhelp-all.txt");
  EXPECT_EQ(names.size(), 217u);
  std::map<OptionStatus, int> counts;
  for (const std::string& n : names) {
    const OptionRow* row = FindOptionRow(n);
    ASSERT_NE(row, nullptr) << n << " is not in the option table";
    EXPECT_EQ(std::string(row->name), n) << "fio's canonical name";
    EXPECT_NE(row->status, OptionStatus::kForeignEngine) << n;
    counts[row->status]++;
  }
  // The figures the report and docs/options.md quote.
  RecordProperty("implemented", counts[OptionStatus::kImplemented]);
  RecordProperty("noop", counts[OptionStatus::kNoOp]);
  RecordProperty("refused", counts[OptionStatus::kRefused]);
  std::cout << "fio --cmdhelp=all: " << names.size() << " options: "
            << counts[OptionStatus::kImplemented] << " implemented, "
            << counts[OptionStatus::kNoOp] << " no-op, " << counts[OptionStatus::kRefused]
            << " refused\n";
}

// The bar: no option of `fio --cmdhelp=all` gets "unknown option", with
// its default, its example or a bare flag; whatever is refused names a reason.
TEST(OptionTableTest, NoFioOptionIsUnknown) {
  for (const std::string& n : DataLines("fio-3.33-cmdhelp-all.txt")) {
    const OptionRow* row = FindOptionRow(n);
    ASSERT_NE(row, nullptr) << n;
    std::vector<std::string> values;
    if (*row->def) values.push_back(row->def);
    if (*row->example) values.push_back(row->example);
    values.push_back("1");
    for (const std::string& v : values) {
      const std::string text = JobWith(*row, absl::StrCat(n, "=", v));
      auto l = ParseJobText(text, "j.fio", Opts());
      if (l.ok()) continue;
      const std::string msg(l.status().message());
      EXPECT_THAT(msg, Not(HasSubstr("unknown option"))) << text;
      EXPECT_THAT(msg, HasSubstr(n)) << text;
    }
  }
}

TEST(OptionTableTest, EveryEngineOptionOfThisFioBuildIsARowNamingItsEngine) {
  for (const std::string& line : DataLines("fio-3.33-engine-options.txt")) {
    std::vector<std::string> f = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (f.size() < 2) continue;  // an engine without options
    const OptionRow* row = FindOptionRow(f[1]);
    ASSERT_NE(row, nullptr) << line;
    const std::vector<std::string> owners = RowEngines(*row);
    EXPECT_THAT(owners, testing::Contains(f[0])) << line;
    if (!IsSupportedEngine(f[0]) && row->status == OptionStatus::kForeignEngine) {
      // "belongs to ioengine X, which iofleet does not support (supported: ...)"
      auto l = ParseJobText(absl::StrCat("[a]\n", f[1], "=1\n"), "j.fio", Opts());
      ASSERT_FALSE(l.ok()) << line;
      EXPECT_THAT(std::string(l.status().message()),
                  HasSubstr(absl::StrCat("option \"", f[1], "\" belongs to ioengine")));
      EXPECT_THAT(std::string(l.status().message()),
                  HasSubstr("which iofleet does not support (supported: io_uring, io_uring_cmd, libaio"));
    }
  }
}

TEST(OptionTableTest, NamesAndAliasesAreUnique) {
  std::set<std::string> seen;
  for (const OptionRow& r : OptionTable()) {
    EXPECT_TRUE(seen.insert(r.name).second) << r.name;
    for (const std::string& a : RowAliases(r)) EXPECT_TRUE(seen.insert(a).second) << a;
    EXPECT_NE(std::string(r.help), "") << r.name;
    if (r.status == OptionStatus::kImplemented) {
      EXPECT_NE(r.apply, nullptr) << r.name;
      // A choice whose only legal value is its default (cmd_type=nvme) has no
      // non-default example; every other implemented row needs one.
      if (r.type != OptionType::kChoice) {
        EXPECT_NE(std::string(r.example), "") << r.name << " needs an example for the round trip";
      }
    } else {
      EXPECT_EQ(r.apply, nullptr) << r.name;
    }
    if (r.status == OptionStatus::kRefused || r.status == OptionStatus::kNoOp) {
      EXPECT_NE(std::string(r.reason), "") << r.name;
    }
    if (r.status == OptionStatus::kRefused) {
      EXPECT_NE(std::string(r.example), "") << r.name << " needs a refused example";
    }
  }
}

// Every implemented row: a job with the row's example parses to something other
// than the job without it, renders with ToJobText, and parses back to the same.
TEST(OptionTableTest, EveryImplementedRowRoundTrips) {
  for (const OptionRow& row : OptionTable()) {
    if (row.status != OptionStatus::kImplemented) continue;
    if (*row.example == '\0') continue;  // a one-value choice (see NamesAndAliasesAreUnique)
    SCOPED_TRACE(row.name);
    const std::string base_text = JobWith(row, "");
    const std::string text = JobWith(row, absl::StrCat(row.name, "=", row.example));
    auto base = ParseJobText(base_text, "base.fio", Opts());
    auto l = ParseJobText(text, "j.fio", Opts());
    ASSERT_TRUE(base.ok()) << base.status();
    ASSERT_TRUE(l.ok()) << l.status() << "\n" << text;
    ASSERT_EQ(l->jobs.size(), 2u);
    EXPECT_NE(Comparable(l->jobs[1]), Comparable(base->jobs[1]))
        << "the example does not change the job:\n" << text;
    const std::string rendered = ToJobText(*l);
    auto back = ParseJobText(rendered, "rendered.fio", Opts());
    ASSERT_TRUE(back.ok()) << back.status() << "\n" << rendered;
    ASSERT_EQ(back->jobs.size(), 2u);
    EXPECT_EQ(Comparable(back->jobs[1]), Comparable(l->jobs[1])) << rendered;
    EXPECT_EQ(ToJobText(*back), rendered) << "not a fixed point";
    // Aliases parse to the same job.
    for (const std::string& a : RowAliases(row)) {
      auto al = ParseJobText(JobWith(row, absl::StrCat(a, "=", row.example)), "alias.fio", Opts());
      ASSERT_TRUE(al.ok()) << a << ": " << al.status();
      EXPECT_EQ(Comparable(al->jobs[1]), Comparable(l->jobs[1])) << a;
    }
  }
}

// Every refused row: its default is a no-op; its example is an error naming the
// option, the value and the missing feature; never "unknown option".
TEST(OptionTableTest, RefusedRowsAcceptTheirDefaultAndNameTheFeature) {
  for (const OptionRow& row : OptionTable()) {
    if (row.status != OptionStatus::kRefused) continue;
    SCOPED_TRACE(row.name);
    if (*row.def) {
      auto ok = ParseJobText(JobWith(row, absl::StrCat(row.name, "=", row.def)), "j.fio", Opts());
      EXPECT_TRUE(ok.ok()) << ok.status();
      if (ok.ok()) {
        // A no-op: the job equals one without it.
        auto base = ParseJobText(JobWith(row, ""), "j.fio", Opts());
        ASSERT_TRUE(base.ok());
        EXPECT_EQ(Comparable(ok->jobs[1]), Comparable(base->jobs[1]));
      }
    }
    auto bad = ParseJobText(JobWith(row, absl::StrCat(row.name, "=", row.example)), "j.fio", Opts());
    ASSERT_FALSE(bad.ok());
    const std::string msg(bad.status().message());
    EXPECT_THAT(msg, HasSubstr(absl::StrCat("option \"", row.name, "\": value \"", row.example,
                                            "\": ", row.reason)));
  }
}

TEST(OptionTableTest, NoOpRowsAcceptWellFormedValuesAndRejectMalformedOnes) {
  for (const OptionRow& row : OptionTable()) {
    if (row.status != OptionStatus::kNoOp) continue;
    SCOPED_TRACE(row.name);
    const std::string v = *row.def ? row.def : (row.type == OptionType::kBool ? "1" : "1");
    auto ok = ParseJobText(JobWith(row, absl::StrCat(row.name, "=", v)), "j.fio", Opts());
    EXPECT_TRUE(ok.ok()) << ok.status();
    if (row.type == OptionType::kBool || row.type == OptionType::kInt ||
        row.type == OptionType::kTime) {
      auto bad = ParseJobText(JobWith(row, absl::StrCat(row.name, "=zz")), "j.fio", Opts());
      EXPECT_FALSE(bad.ok());
    }
  }
}

TEST(OptionTableTest, EngineOptionsNeedTheirEngine) {
  // As fio: hipri with psync is refused, naming the engines that own it.
  auto l = ParseJobText("[a]\nhipri=1\n", "j.fio", Opts());
  ASSERT_FALSE(l.ok());
  EXPECT_THAT(std::string(l.status().message()),
              HasSubstr("j.fio:2: job \"a\": option \"hipri\": value \"1\": belongs to ioengine "
                        "io_uring, io_uring_cmd, pvsync2 (also sg, xnvme, which iofleet does not "
                        "support), not to this job's ioengine psync"));
  // Given before ioengine in the same section it is fine (fio applies engine
  // options after the engine is chosen).
  EXPECT_TRUE(ParseJobText("[a]\nhipri\nioengine=io_uring\n", "j.fio", Opts()).ok());
  EXPECT_TRUE(ParseJobText("[a]\nhipri\nioengine=pvsync2\n", "j.fio", Opts()).ok());
  // A job that inherits it from [global] but changes engine is refused (fio ignores it).
  auto g = ParseJobText("[global]\nioengine=libaio\nuserspace_reap=1\n[a]\nioengine=io_uring\n",
                        "j.fio", Opts());
  ASSERT_FALSE(g.ok());
  EXPECT_THAT(std::string(g.status().message()),
              HasSubstr("option \"userspace_reap\": value \"1\": belongs to ioengine libaio, not to "
                        "this job's ioengine io_uring"));
  // An engine iofleet does not have.
  auto n = ParseJobText("[a]\nioengine=net\nport=8888\n", "j.fio", Opts());
  ASSERT_FALSE(n.ok());
  EXPECT_THAT(std::string(n.status().message()),
              HasSubstr("option \"port\" belongs to ioengine net, netsplice, rdma"));
  auto e = ParseJobText("[a]\nioengine=rbd\n", "j.fio", Opts());
  ASSERT_FALSE(e.ok());
  EXPECT_THAT(std::string(e.status().message()),
              HasSubstr("option \"ioengine\": value \"rbd\": ioengine rbd is a fio engine that "
                        "iofleet does not support (supported: io_uring, io_uring_cmd, libaio, "
                        "psync, sync, pvsync, pvsync2, null)"));
}

TEST(OptionTableTest, KubestrStockJobParses) {
  // kubestr's fio job (checked with fio 3.33 --parse-only): verify=0 is fio's
  // default (a no-op); gtod_reduce=1 turns the latency figures off, as in fio.
  const std::string job =
      "[global]\nrandrepeat=0\nverify=0\nioengine=libaio\ndirect=1\ngtod_reduce=0\n"
      "[job1]\nname=read_iops\nbs=4K\niodepth=64\nsize=2G\nreadwrite=randread\ntime_based\n"
      "ramp_time=2s\nruntime=15s\n";
  auto l = ParseJobText(job, "kubestr.fio", Opts());
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(l->jobs[0].name, "read_iops");
  EXPECT_EQ(l->global_options[1].first, "verify");  // echoed as fio would
  auto r = ParseJobText("[global]\ngtod_reduce=1\n[a]\n", "k.fio", Opts());
  ASSERT_TRUE(r.ok()) << r.status();
  const JobSpec& a = r->jobs[0];
  EXPECT_TRUE(a.gtod_reduce);
  EXPECT_TRUE(a.disable_lat && a.disable_clat && a.disable_slat && a.disable_bw);
  EXPECT_FALSE(a.clat_percentiles || a.lat_percentiles || a.slat_percentiles);
}

TEST(OptionTableTest, ReferenceListsEveryRow) {
  const std::string md = OptionsReferenceMarkdown();
  for (const OptionRow& r : OptionTable()) {
    EXPECT_THAT(md, HasSubstr(absl::StrCat("| `", r.name, "` |"))) << r.name;
  }
}

}  // namespace
}  // namespace iofleet::jobspec

namespace iofleet::jobspec {
namespace {

JobSpec One(const std::string& body) {
  auto l = ParseJobText("[a]\n" + body + "\n", "j.fio", Opts());
  EXPECT_TRUE(l.ok()) << l.status() << "\n" << body;
  return l.ok() && !l->jobs.empty() ? l->jobs[0] : JobSpec{};
}

std::string Error(const std::string& body) {
  auto l = ParseJobText("[a]\n" + body + "\n", "j.fio", Opts());
  EXPECT_FALSE(l.ok()) << body;
  return l.ok() ? "" : std::string(l.status().message());
}

// Parses, renders with ToJobText, parses back: the same job, a fixed point.
void RoundTrips(const std::string& text) {
  SCOPED_TRACE(text);
  auto l = ParseJobText(text, "j.fio", Opts());
  ASSERT_TRUE(l.ok()) << l.status();
  const std::string rendered = ToJobText(*l);
  auto back = ParseJobText(rendered, "rendered.fio", Opts());
  ASSERT_TRUE(back.ok()) << back.status() << "\n" << rendered;
  ASSERT_EQ(back->jobs.size(), l->jobs.size());
  for (size_t i = 0; i < l->jobs.size(); ++i) {
    EXPECT_EQ(Comparable(back->jobs[i]), Comparable(l->jobs[i])) << rendered;
  }
  EXPECT_EQ(ToJobText(*back), rendered) << "not a fixed point";
}

// fio 3.33's ignore_error=READ_LIST,WRITE_LIST,VERIFY_LIST: ',' between the
// classes, ':' between a class's errors (its HOWTO's EAGAIN,ENOSPC:122); a
// class given a list gets its continue_on_error bit. iofleet before split the
// classes on ':' and read ",,84" as a read list, continue_on_error untouched.
TEST(IgnoreErrorOptionTest, ClassesAreCommaSeparatedAsFios) {
  JobSpec j = One("ignore_error=EAGAIN,ENOSPC:122");
  EXPECT_EQ(j.ignore_error[0], std::vector<int>({11}));
  EXPECT_EQ(j.ignore_error[1], std::vector<int>({28, 122}));
  EXPECT_TRUE(j.ignore_error[2].empty());
  EXPECT_EQ(j.continue_on_error, uint32_t{kErrorIo});
  j = One("ignore_error=,,84");
  EXPECT_TRUE(j.ignore_error[0].empty());
  EXPECT_TRUE(j.ignore_error[1].empty());
  EXPECT_EQ(j.ignore_error[2], std::vector<int>({84}));
  EXPECT_EQ(j.continue_on_error, uint32_t{kErrorVerify});
  // An empty element ends the class (fio's strsep loop); negative numbers count as theirs.
  EXPECT_EQ(One("ignore_error=EIO::EAGAIN").ignore_error[0], std::vector<int>({5}));
  EXPECT_EQ(One("ignore_error=-5").ignore_error[0], std::vector<int>({5}));
  // continue_on_error given after ignore_error sets the value; before, ignore_error adds to it.
  EXPECT_EQ(One("ignore_error=,,84\ncontinue_on_error=none").continue_on_error, 0u);
  EXPECT_EQ(One("continue_on_error=read\nignore_error=,,84").continue_on_error,
            uint32_t{kErrorRead | kErrorVerify});
}

TEST(IgnoreErrorOptionTest, BadValuesNameTheFieldAndValue) {
  EXPECT_THAT(Error("ignore_error=,,EILSEQ"),
              HasSubstr("option \"ignore_error\": value \",,EILSEQ\" has an error name \"EILSEQ\" fio 3.33 does "
                        "not know (it knows EPERM..ERANGE, errno 1..34): give its number (84)"));
  EXPECT_THAT(Error("ignore_error=1,2,3,4"),
              HasSubstr("option \"ignore_error\": value \"1,2,3,4\" has more than 3 ','-separated classes"));
  EXPECT_THAT(Error("ignore_error=EFOO"), HasSubstr("error name \"EFOO\""));
  EXPECT_THAT(Error("ignore_error=abc"), HasSubstr("has a bad error \"abc\""));
  EXPECT_THAT(Error("ignore_error=0"), HasSubstr("has a bad error \"0\""));
}

TEST(IgnoreErrorOptionTest, RendersBackToTheSameJob) {
  RoundTrips("[a]\nignore_error=,,84\n");
  RoundTrips("[a]\nignore_error=EAGAIN,ENOSPC:122\n");
  RoundTrips("[a]\nignore_error=,,84\ncontinue_on_error=none\n");
  RoundTrips("[a]\ncontinue_on_error=read\nignore_error=,,84\n");
  RoundTrips("[a]\ncontinue_on_error=all\nignore_error=EIO\n");
  RoundTrips("[global]\nignore_error=EIO,EIO\n[a]\nignore_error=,,84\n[b]\n");
}

// fio 3.33's exitall is a flag whose callback sets one switch for the run,
// whatever number is given: exitall=0 turns it on too. A non-boolean is an error.
TEST(ExitallOptionTest, AnyValueTurnsItOn) {
  EXPECT_TRUE(One("exitall").exitall);
  EXPECT_TRUE(One("exitall=1").exitall);
  EXPECT_TRUE(One("exitall=0").exitall);
  EXPECT_FALSE(One("").exitall);
  EXPECT_THAT(Error("exitall=foo"), HasSubstr("option \"exitall\": value \"foo\""));
  EXPECT_EQ(One("exit_what=stonewall").exit_what, ExitWhat::kStonewall);
  EXPECT_THAT(Error("exit_what=some"), HasSubstr("option \"exit_what\": value \"some\""));
  RoundTrips("[a]\nexitall=0\nexit_what=all\n");
}

// blockalign: random I/O only; a value other than the smallest block turns the
// random map off (fio 3.33: "Any use of blockalign= turns off randommap").
TEST(BlockalignOptionTest, TurnsTheRandomMapOffForRandomIo) {
  EXPECT_TRUE(One("rw=randread\nbs=4k\nba=16k").norandommap);
  EXPECT_EQ(EffectiveBlockalign(One("rw=randread\nbs=4k\nba=16k"), kRead), 16384u);
  EXPECT_FALSE(One("rw=randread\nbs=4k\nba=4k").norandommap);
  EXPECT_FALSE(One("rw=read\nbs=4k\nba=16k").norandommap);
  EXPECT_EQ(EffectiveBlockalign(One("rw=read\nbs=4k\nba=16k"), kRead), 4096u);  // sequential: ignored
  JobSpec rw = One("rw=randrw\nbs=4k\nba=8k,16k");
  EXPECT_EQ(EffectiveBlockalign(rw, kRead), 8192u);
  EXPECT_EQ(EffectiveBlockalign(rw, kWrite), 16384u);
  // A distribution draws over the aligned blocks (fio's examples/jesd219.fio:
  // blockalign=4k with a zoned distribution); lfsr and zbd are refused.
  EXPECT_EQ(EffectiveBlockalign(One("rw=randread\nbs=4k\nba=16k\nrandom_distribution=zipf:1.2"), kRead), 16384u);
  EXPECT_THAT(Error("rw=randread\nbs=4k\nba=16k\nrandom_generator=lfsr"),
              HasSubstr("option \"ba\": value \"16k\" (other than the smallest block size) with random_generator=lfsr"));
  EXPECT_THAT(Error("rw=randread\nbs=4k\nba=0"), HasSubstr("must be > 0"));
  RoundTrips("[a]\nrw=randread\nbs=4k\nba=16k\n");
}

}  // namespace
}  // namespace iofleet::jobspec
