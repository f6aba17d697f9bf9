#include "io/durable_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace zm {

namespace {

// An open file descriptor, closed once.
struct Fd {
  int fd = -1;
  explicit Fd(int opened) : fd(opened) {}
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
  int release() {
    const int result = ::close(fd);
    fd = -1;
    return result;
  }
};

std::string write_all(int fd, const std::string& content) {
  size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return errno_text(n < 0 ? errno : EIO);
    done += static_cast<size_t>(n);
  }
  return "";
}

std::string read_back(const std::string& path) {
  Fd file(::open(path.c_str(), O_RDONLY));
  if (file.fd < 0) return {};
  std::string content;
  char buffer[4096];
  ssize_t n;
  while ((n = ::read(file.fd, buffer, sizeof(buffer))) > 0)
    content.append(buffer, static_cast<size_t>(n));
  return content;
}

// The steps of write_file_durably up to the rename; "" or what failed.
std::string write_temporary(const std::string& temporary, const std::string& content) {
  Fd file(::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (file.fd < 0) return fmt::format("cannot create {}: {}", temporary, errno_text(errno));
  std::string error = write_all(file.fd, content);
  if (error.empty() && ::fsync(file.fd) != 0) error = errno_text(errno);
  if (error.empty() && file.release() != 0) error = errno_text(errno);
  if (!error.empty()) return fmt::format("writing {} failed: {}", temporary, error);
  if (read_back(temporary) != content)
    return fmt::format("{} does not read back as written", temporary);
  return "";
}

}  // namespace

std::string errno_text(int error) {
  return std::strerror(error);
}

std::string write_file_durably(const std::string& path, const std::string& content) {
  const std::string temporary = path + ".tmp";
  std::string error = write_temporary(temporary, content);
  if (error.empty() && std::rename(temporary.c_str(), path.c_str()) != 0)
    error = fmt::format("renaming {} to {} failed: {}", temporary, path, errno_text(errno));
  if (!error.empty()) {
    ::unlink(temporary.c_str());
    return error;
  }
  return sync_directory(std::filesystem::path(path).parent_path().string());
}

std::string sync_file(const std::string& path) {
  Fd file(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (file.fd < 0 || ::fsync(file.fd) != 0)
    return fmt::format("{}: fsync failed: {}", path, errno_text(errno));
  return "";
}

std::string sync_directory(const std::string& dir) {
  Fd handle(::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (handle.fd < 0 || ::fsync(handle.fd) != 0)
    return fmt::format("{}: fsync of the directory failed: {}", dir, errno_text(errno));
  return "";
}

}  // namespace zm
