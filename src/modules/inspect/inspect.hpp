// Reading zeromini's HDF5 files back: what `zeromini inspect` prints and what `zeromini export`
// writes (commands.hpp).
#pragma once

#include <string>

namespace zm {

class Watchdog;

// A human-readable description of a results file or checkpoint (any other HDF5 file is listed
// object by object). Checkpoints are read in full, so every checksum is verified (under
// `watchdog`, as every file wait is).
std::string describe_hdf5(const std::string& path, Watchdog& watchdog);

// Writes the checkpoint's parameters as one fp32 dataset per tensor (GPT-2 names, PyTorch
// nn.Linear layout (out, in); wte with the real vocabulary's rows). Returns the tensor count.
// The checkpoint is verified first, under `watchdog`.
int export_parameters(const std::string& checkpoint, const std::string& out, Watchdog& watchdog);

}  // namespace zm
