// `zeromini run --check-reference FILE` and `--write-reference FILE`: a run's losses compared
// with a committed reference, or written as one (reference_*.hpp). Checked before training, so
// that a run the reference cannot judge is refused at once; done after it, by rank 0. An
// extension of the run command (train/command_extensions.hpp).
#pragma once

#include <memory>

#include "train/command_extensions.hpp"

namespace zm {

// The run completed, but a loss missed the reference given with --check-reference (outside its
// tolerance): the run's exit status (README, the exit-status table).
constexpr int kExitReferenceMiss = 7;

std::unique_ptr<RunCommandExtension> make_reference_run();

}  // namespace zm
