// What else reads a checkpoint that a run resumes from (io/checkpoint.hpp): each reader is called
// on every rank, in the order added, with the open file once its model has been checked and
// before the states are read, and with the run's deck and rank count. It may print; a zm::Error
// refuses the checkpoint as any other error reading it does.
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <functional>
#include <string>

#include "core/deck.hpp"

namespace zm {

using CheckpointReader =
    std::function<void(hid_t file, const std::string& path, const Deck& deck, int64_t ranks)>;

void add_checkpoint_reader(CheckpointReader reader);

}  // namespace zm
