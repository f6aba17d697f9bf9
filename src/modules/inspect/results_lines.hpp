// What the core's writers put in results.h5, read back as lines of `zeromini inspect`: the run's
// status (with the abort record and the output directory's lock beside the file), its manifest
// (io/manifest.hpp) and a stage's throughput (io/results_file.hpp).
#pragma once

#include <hdf5.h>

#include <string>

namespace zm {

// `status` as read from `results_path`, explained where it is "running": the status "running" is
// written at the start and kept until the run ends, so read alone it cannot tell a run that is
// still going from one that died; the abort record a rank that ended the job wrote and the lock
// of the output directory, which names the process that holds it, tell the three apart
// (io/run_status.hpp):
//   "aborted (rank 1, exit status 5): zeromini: rank 1: watchdog: ..."  (an abort record)
//   "running (PID 1234 on host n1 (started ...))"                       (that process is alive)
//   "not closed cleanly: ..."                (the run ended without recording how: killed)
// Other statuses are returned as they are.
std::string describe_run_status(const std::string& results_path, const std::string& status);

// The /manifest group of results.h5 as lines ("" when absent).
std::string describe_manifest(hid_t file);

// "    throughput ...\n" lines for one stage (its group); "" when the stage has none.
std::string describe_stage_throughput(hid_t group);

}  // namespace zm
