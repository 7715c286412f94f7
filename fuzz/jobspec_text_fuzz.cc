// libFuzzer target: the fio job-file parser. Any input either parses or is an
// InvalidArgument; what parses renders with ToJobText to text that parses again
// and renders identically (a fixed point).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>

#include "common/jobspec/parser.h"

namespace {

const iofleet::jobspec::ParseOptions& Options() {
  static const std::map<std::string, std::string> env = {{"DEV", "/dev/nvme0n1"}, {"BS", "4k"}};
  static const iofleet::jobspec::ParseOptions o = [] {
    iofleet::jobspec::ParseOptions p;
    p.env = &env;
    p.allow_include = false;  // the fuzzer must not read the machine's files
    return p;
  }();
  return o;
}

void Fail(const char* what, const std::string& a, const std::string& b) {
  fprintf(stderr, "%s\n--- first ---\n%s\n--- second ---\n%s\n", what, a.c_str(), b.c_str());
  abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 64 * 1024) return -1;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto list = iofleet::jobspec::ParseJobText(text, "fuzz.fio", Options());
  if (!list.ok()) {
    if (list.status().code() != absl::StatusCode::kInvalidArgument) {
      Fail("parse error is not InvalidArgument", std::string(text), list.status().ToString());
    }
    return 0;
  }
  const std::string rendered = iofleet::jobspec::ToJobText(*list);
  auto again = iofleet::jobspec::ParseJobText(rendered, "rendered.fio", Options());
  if (!again.ok()) Fail("ToJobText output does not parse", rendered, again.status().ToString());
  if (again->jobs.size() != list->jobs.size())
    Fail("job count changed", std::string(text), rendered);
  const std::string rendered2 = iofleet::jobspec::ToJobText(*again);
  if (rendered2 != rendered) Fail("ToJobText is not a fixed point", rendered, rendered2);
  return 0;
}
