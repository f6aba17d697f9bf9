// A resumed run compared with the run that wrote its checkpoint. Resuming with another stage or
// rank count is supported (checkpoints reshard), but some changes alter the training itself:
// the learning-rate schedule (train.lr, min_lr_ratio, warmup, steps), the global batch
// (micro_batch x grad_accum x data-parallel ranks, those of distinct model-parallel groups), the
// data order (data.source, train.seed) or the optimizer. Those are named in a warning; a different
// model is refused earlier (the checkpoint's header).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/deck.hpp"

namespace zm {

// One line per kind of change, naming the keys and their values then and now; empty when the
// training goes on as it was.
std::vector<std::string> resume_changes(const Deck& written, int64_t written_ranks, const Deck& now,
                                        int64_t ranks);

}  // namespace zm
