// Exposed communication of a stage over all ranks (comm/exposure.hpp defines the figures).
#pragma once

#include "comm/communicator.hpp"
#include "io/run_records.hpp"

namespace zm {

// Collective: rank 0 receives every rank's per-step exposure and computes the stage's means
// over the timed steps (all but the first when there are two or more, as for the step times).
void gather_exposure(StageResult& result, Communicator& comm);

}  // namespace zm
