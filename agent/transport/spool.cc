#include "agent/transport/spool.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace iofleet::agent {
namespace {

constexpr uint32_t kMaxRecord = 64u << 20;  // far above any real record

uint32_t Fnv1a(const char* p, size_t n) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < n; ++i) {
    h ^= static_cast<uint8_t>(p[i]);
    h *= 16777619u;
  }
  return h;
}

void PutU32(char* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

uint32_t GetU32(const char* in) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(static_cast<uint8_t>(in[i])) << (8 * i);
  return v;
}

std::string Sanitize(const std::string& id) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : id) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '_' || (c == '.' && !out.empty())) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  if (out.empty()) out = "%";
  return out;
}

absl::StatusOr<std::string> ReadWholeFile(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return IoError("open spool", path, errno);
  std::string data;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      close(fd);
      return IoError("read spool", path, err);
    }
    if (n == 0) break;
    data.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return data;
}

// Walks records; calls fn(payload, len) for each valid one; returns the valid length.
template <typename Fn>
uint64_t Walk(const std::string& data, Fn&& fn) {
  uint64_t off = 0;
  while (data.size() - off >= 8) {
    const uint32_t len = GetU32(data.data() + off);
    const uint32_t sum = GetU32(data.data() + off + 4);
    if (len > kMaxRecord || data.size() - off - 8 < len) break;
    const char* payload = data.data() + off + 8;
    if (Fnv1a(payload, len) != sum) break;
    if (!fn(payload, len)) break;
    off += 8 + len;
  }
  return off;
}

}  // namespace

std::string SpoolFileName(const std::string& run_id) { return Sanitize(run_id) + ".spool"; }
std::string SentMarkerName(const std::string& run_id) { return Sanitize(run_id) + ".sent"; }
std::string ReserveFileName(const std::string& run_id) { return Sanitize(run_id) + ".reserve"; }

absl::Status ReserveSpace(const std::string& dir, const std::string& run_id, uint64_t bytes) {
  const std::string path = dir + "/" + ReserveFileName(run_id);
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return IoError("create spool reserve", path, errno);
  int err = bytes == 0 ? 0 : posix_fallocate(fd, 0, static_cast<off_t>(bytes));
  if (err == EOPNOTSUPP || err == EINVAL) {
    // No fallocate here: write the bytes (they are allocated all the same).
    err = 0;
    static const char kZeros[1 << 16] = {};
    for (uint64_t done = 0; done < bytes && err == 0;) {
      const ssize_t n = pwrite(fd, kZeros, std::min<uint64_t>(sizeof(kZeros), bytes - done),
                               static_cast<off_t>(done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) err = n < 0 ? errno : EIO;
      done += n > 0 ? static_cast<uint64_t>(n) : 0;
    }
  }
  if (err == 0 && fdatasync(fd) != 0) err = errno;
  close(fd);
  if (err != 0) {
    unlink(path.c_str());
    return IoError(absl::StrCat("reserve ", bytes, " bytes for the run's result in"), path, err);
  }
  return absl::OkStatus();
}

void ReleaseReserve(const std::string& dir, const std::string& run_id) {
  unlink((dir + "/" + ReserveFileName(run_id)).c_str());
}

absl::StatusOr<std::unique_ptr<SpoolWriter>> SpoolWriter::Open(const std::string& dir,
                                                               const std::string& run_id) {
  const std::string path = dir + "/" + SpoolFileName(run_id);
  struct stat st;
  if (stat(path.c_str(), &st) == 0) {
    IOFLEET_ASSIGN_OR_RETURN(const uint64_t valid, ValidSpoolLength(path));
    if (valid != static_cast<uint64_t>(st.st_size) &&
        truncate(path.c_str(), static_cast<off_t>(valid)) != 0) {
      return IoError("truncate torn spool tail", path, errno);
    }
  }
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return IoError("open spool for append", path, errno);
  if (fstat(fd, &st) != 0) {
    const int err = errno;
    close(fd);
    return IoError("stat spool", path, err);
  }
  return std::unique_ptr<SpoolWriter>(new SpoolWriter(fd, path, static_cast<uint64_t>(st.st_size)));
}

SpoolWriter::~SpoolWriter() {
  if (fd_ >= 0) {
    if (unsynced_.load() > 0) fdatasync(fd_);
    close(fd_);
  }
}

absl::Status SpoolWriter::Append(const iofleet::v1::AgentMessage& msg) {
  std::string rec(8, '\0');
  if (!msg.AppendToString(&rec)) return absl::InternalError("spool: cannot serialise record");
  const uint32_t len = static_cast<uint32_t>(rec.size() - 8);
  PutU32(rec.data(), len);
  PutU32(rec.data() + 4, Fnv1a(rec.data() + 8, len));
  size_t done = 0;
  while (done < rec.size()) {
    const ssize_t n = write(fd_, rec.data() + done, rec.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      // A torn record would end every later read at it: cut it off.
      if (done > 0 && ftruncate(fd_, static_cast<off_t>(size_)) != 0) {
        return IoError("cut torn record off spool", path_, errno);
      }
      return IoError("append spool", path_, err);
    }
    done += static_cast<size_t>(n);
  }
  size_ += rec.size();
  ++unsynced_;
  return absl::OkStatus();
}

absl::Status SpoolWriter::Sync() {
  const uint32_t claimed = unsynced_.exchange(0);
  if (claimed == 0) return absl::OkStatus();
  if (fdatasync(fd_) != 0) {
    unsynced_ += claimed;  // still not durable: the next Sync() tries again
    return IoError("fdatasync spool", path_, errno);
  }
  return absl::OkStatus();
}

absl::Status SpoolWriter::SyncFd() const {
  if (fdatasync(fd_) != 0) return IoError("fdatasync spool", path_, errno);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<iofleet::v1::AgentMessage>> ReadSpoolFile(const std::string& path) {
  IOFLEET_ASSIGN_OR_RETURN(const std::string data, ReadWholeFile(path));
  std::vector<iofleet::v1::AgentMessage> out;
  Walk(data, [&](const char* p, uint32_t len) {
    iofleet::v1::AgentMessage m;
    if (!m.ParseFromArray(p, static_cast<int>(len))) return false;
    out.push_back(std::move(m));
    return true;
  });
  return out;
}

absl::StatusOr<uint64_t> ValidSpoolLength(const std::string& path) {
  IOFLEET_ASSIGN_OR_RETURN(const std::string data, ReadWholeFile(path));
  return Walk(data, [](const char*, uint32_t) { return true; });
}

}  // namespace iofleet::agent
