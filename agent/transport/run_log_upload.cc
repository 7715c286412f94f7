#include "agent/transport/run_log_upload.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>

#include "absl/strings/str_cat.h"

namespace iofleet::agent {

namespace {

// Reads up to `want` bytes of `fd` from its start into *out.
bool ReadPrefix(int fd, uint64_t want, std::string* out, int* err) {
  out->resize(want);
  uint64_t got = 0;
  while (got < want) {
    const ssize_t n = ::pread(fd, out->data() + got, want - got, static_cast<off_t>(got));
    if (n < 0) {
      if (errno == EINTR) continue;
      *err = errno;
      return false;
    }
    if (n == 0) break;
    got += static_cast<uint64_t>(n);
  }
  out->resize(got);
  return true;
}

}  // namespace

std::vector<iofleet::v1::RunLogFile> ReadRunLogs(const std::string& run_id,
                                                 const std::vector<std::string>& paths,
                                                 uint64_t max_file, uint64_t max_run,
                                                 std::vector<std::string>* errors) {
  std::vector<iofleet::v1::RunLogFile> out;
  std::set<std::string> names;
  uint64_t taken = 0;
  for (const std::string& path : paths) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      errors->push_back(absl::StrCat(path, ": ", std::strerror(errno)));
      continue;
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      errors->push_back(absl::StrCat(path, ": not a regular file"));
      ::close(fd);
      continue;
    }
    const uint64_t size = static_cast<uint64_t>(st.st_size);
    const uint64_t room = max_run > taken ? max_run - taken : 0;
    const uint64_t want = std::min({size, max_file, room});
    iofleet::v1::RunLogFile f;
    int err = 0;
    if (!ReadPrefix(fd, want, f.mutable_data(), &err)) {
      errors->push_back(absl::StrCat(path, ": read: ", std::strerror(err)));
      ::close(fd);
      continue;
    }
    ::close(fd);
    std::string* data = f.mutable_data();
    // fio's logs are ASCII text; anything else (a compressed log) is listed
    // with no data, so every store can keep what it gets as text.
    const bool text = std::all_of(data->begin(), data->end(), [](char ch) {
      const unsigned char u = static_cast<unsigned char>(ch);
      return u == '\t' || u == '\n' || u == '\r' || (u >= 0x20 && u < 0x7f);
    });
    if (!text) {
      errors->push_back(absl::StrCat(path, ": not a text file; its data stays on the agent"));
      data->clear();
      f.set_truncated(true);
    } else if (data->size() < size) {
      // Cut after the last whole line, so every line served is one fio wrote.
      const size_t nl = data->rfind('\n');
      data->resize(nl == std::string::npos ? 0 : nl + 1);
      f.set_truncated(true);
    }
    taken += data->size();
    std::string base = path.substr(path.rfind('/') + 1);
    std::string name = base;
    for (int i = 2; names.contains(name); ++i) name = absl::StrCat(base, ".", i);
    names.insert(name);
    f.set_run_id(run_id);
    f.set_name(name);
    f.set_path(path);
    f.set_size_bytes(size);
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace iofleet::agent
