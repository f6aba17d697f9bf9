// Where a results file's run records how it ended when it cannot write results.h5. The status
// "running" is written at the start and kept until the run ends: read alone, it cannot tell a run
// that is still going from one that died. Beside results.h5 lie the abort record a rank that ended
// the job wrote (core/abort_record.hpp) and the output directory's lock, which names the process
// that holds the directory (io/output_dir.hpp); together they tell the three apart.
#pragma once

#include <string>

namespace zm {

// Where the abort record of the run writing `results_path` is.
inline std::string abort_record_path(const std::string& results_path) {
  return results_path + ".abort";
}

}  // namespace zm
