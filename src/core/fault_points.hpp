// Fault points: named places where tests make a run fail on purpose, to prove the core's fault
// handling on real runs. A point calls the handlers added for its name (by a module's
// registration); with none, it does nothing. A handler may end, stop or delay the process, act on
// the subject, or throw (the site then fails as on an error of its own). The points:
// step.gradients (after the last backward; the subject: the typed engine), checkpoint.unit and
// checkpoint.written (around the last unit's first state; the file), checkpoint.publish (before
// the rename), results.gather, results.write (rank 0; the file) and mpi.init (rank -1).
#pragma once

#include <any>
#include <cstdint>
#include <functional>
#include <string>

namespace zm {

// rank: in the world; step: the step (1-based) the point is in, or after.
using FaultHandler = std::function<void(int rank, int64_t step, const std::any& subject)>;
void add_fault_handler(std::string point, FaultHandler handler);
void fault_point(const char* point, int rank, int64_t step, const std::any& subject = {});

}  // namespace zm
