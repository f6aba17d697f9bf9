// What a results file's status says about the run that wrote it. The status "running" is
// written at the start and kept until the run ends: read alone, it cannot tell a run that is
// still going from one that died. Beside results.h5 lie the abort record a rank that ended the
// job wrote (core/abort_record.hpp) and the output directory's lock, which names the process
// that holds the directory (io/output_dir.hpp); together they tell the three apart.
#pragma once

#include <string>

namespace zm {

// Where the abort record of the run writing `results_path` is.
std::string abort_record_path(const std::string& results_path);

// `status` as read from `results_path`, explained where it is "running":
//   "aborted (rank 1, exit status 5): zeromini: rank 1: watchdog: ..."  (an abort record)
//   "running (PID 1234 on host n1 (started ...))"                       (that process is alive)
//   "not closed cleanly: ..."                (the run ended without recording how: killed)
// Other statuses are returned as they are.
std::string describe_run_status(const std::string& results_path, const std::string& status);

}  // namespace zm
