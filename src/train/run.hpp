// A whole run: for each stage the deck asks for, build a Trainer, train, and gather the figures.
#pragma once

#include <vector>

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

// Rank 0 prints the run's closing lines: what the run reports say before the figure of merit
// (io/run_report.hpp), the figure of merit (the last stage's tokens/s per rank) and, over several
// stages, each stage's against the first, then what the reports say after it.
void print_closing_lines(const Deck& deck, const std::vector<StageResult>& results);

}  // namespace zm
