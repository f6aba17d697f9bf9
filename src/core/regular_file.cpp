#include "core/regular_file.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "core/error.hpp"

namespace zm {

namespace {

// "" for a regular file, else what the file is instead ("a directory").
const char* kind_of_file(mode_t mode) {
  if (S_ISREG(mode)) return "";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "a file of an unknown type";
}

}  // namespace

void require_regular_file(const std::string& path, const std::string& what) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) {
    const int error = errno;
    if (error == ENOENT) fail("{}: the {} does not exist", path, what);
    if (error == ENOTDIR)
      fail("{}: the {} does not exist (a part of the path is not a directory)", path, what);
    fail("{}: cannot read the {}: {}", path, what, std::strerror(error));
  }
  const std::string kind = kind_of_file(info.st_mode);
  if (!kind.empty()) fail("{}: the {} is {}, not a regular file", path, what, kind);
}

void require_regular_or_absent(const std::string& path, const std::string& what) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) return;  // absent (or unreachable: the create says why)
  const std::string kind = kind_of_file(info.st_mode);
  if (!kind.empty()) fail("{}: the {} is {}, not a regular file", path, what, kind);
}

}  // namespace zm
