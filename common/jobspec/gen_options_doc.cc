// Prints docs/options.md, the option reference generated from the table
// (common/jobspec/options.cc). CI (ctest jobspec_options_doc_current) fails when
// the checked-in file differs: regenerate with
//   build/bin/gen_options_doc > docs/options.md
#include <cstdio>
#include <string>

#include "common/jobspec/options.h"

int main() {
  const std::string md = iofleet::jobspec::OptionsReferenceMarkdown();
  std::fwrite(md.data(), 1, md.size(), stdout);
  return 0;
}
