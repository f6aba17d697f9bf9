// Small files written so that a crash or a full disk can never leave them empty or half written,
// and the file-system checks done before anything blocks.
#pragma once

#include <string>

namespace zm {

// Writes `content` to `path`: into path.tmp, flushed, fsync'ed, closed, read back and compared,
// renamed over `path`, and the directory fsync'ed. Returns "" or what failed (with the errno
// text); on failure `path` is untouched and path.tmp removed.
std::string write_file_durably(const std::string& path, const std::string& content);

// fsync of a file (so that a write error the file system deferred, such as a full disk or
// quota on a network file system, surfaces now) and of the directory that holds it (so that a
// rename into it survives a crash). Return "" or what failed.
std::string sync_file(const std::string& path);
std::string sync_directory(const std::string& dir);

// "strerror(errno)" as a string, for messages.
std::string errno_text(int error);

}  // namespace zm
