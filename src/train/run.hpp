// A whole run: for each stage the deck asks for, build a Trainer, train, and gather the figures.
#pragma once

#include "comm/communicator.hpp"
#include "comm/run_context.hpp"
#include "core/deck.hpp"
#include "io/run_records.hpp"
#include "train/trainer.hpp"

namespace zm {

// Trains every stage the deck asks for; writes results.h5 and checkpoints under output.dir
// (when `write_outputs`), resumes from train.resume, and stops cleanly on SIGTERM. Every phase of
// the run reports to `context` (its ledger is required), or to a copy with the span observer a
// module gave it (train/training_extensions.hpp).
RunOutcome run_training(const Deck& deck, Communicator& comm, const RunContext& context,
                        bool write_outputs = true);

}  // namespace zm
