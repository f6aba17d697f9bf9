#include "core/abort_record.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

namespace zm {

namespace {

// Globals, set before any thread or handler reads them: a signal handler can use nothing else.
char g_path[4096];
int g_rank = -1;
std::atomic<bool> g_recording{false};

void put(int fd, const char* text) {
  const ssize_t ignored = write(fd, text, std::strlen(text));
  (void)ignored;
}

// Decimal digits of `value` without the C library's formatting (not async-signal-safe).
void put_int(int fd, int value) {
  char text[16] = {};  // filled from the end: at most 10 digits, a sign and the '\0'
  char* at = text + sizeof(text) - 1;
  unsigned magnitude = value < 0 ? 0u - static_cast<unsigned>(value) : static_cast<unsigned>(value);
  do *--at = static_cast<char>('0' + magnitude % 10);
  while ((magnitude /= 10) > 0);
  if (value < 0) *--at = '-';
  put(fd, at);
}

}  // namespace

void set_abort_record(const std::string& path, int rank) {
  g_recording = false;
  if (path.empty() || path.size() >= sizeof(g_path)) return;
  std::memcpy(g_path, path.c_str(), path.size() + 1);
  g_rank = rank;
  g_recording = true;
}

void write_abort_record(const char* message, int exit_code) noexcept {
  if (!g_recording) return;
  const int fd = open(g_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return;  // another rank recorded first, or the directory takes nothing more
  put(fd, "status aborted\nrank ");
  put_int(fd, g_rank);
  put(fd, "\nexit_status ");
  put_int(fd, exit_code);
  put(fd, "\nreason ");
  put(fd, message);
  put(fd, "\n");
  fsync(fd);
  close(fd);
}

}  // namespace zm
