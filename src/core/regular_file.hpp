// Input files are checked with stat() before they are opened: opening a FIFO for reading blocks
// until a writer appears, and a directory or a device opens but reads as nonsense or forever. A
// run given one of these should stop at once with a message, not hang.
#pragma once

#include <string>

namespace zm {

// Throws zm::Error unless `path` names a regular file (symbolic links are followed). `what` is
// what the file is for ("deck", "machine file"); the messages read
// "<path>: the <what> is a FIFO (named pipe), not a regular file", "<path>: the <what> does not
// exist" and so on.
void require_regular_file(const std::string& path, const std::string& what);

// For a file about to be created or replaced: throws zm::Error if `path` exists and is not a
// regular file (a FIFO opened for writing blocks, or fills and blocks, with no reader).
void require_regular_or_absent(const std::string& path, const std::string& what);

}  // namespace zm
