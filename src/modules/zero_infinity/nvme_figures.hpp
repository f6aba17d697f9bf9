// This rank's NVMe transfers (async_io.hpp's this_rank_io), measured step by step and added to
// each stage's results (io/stage_figures.hpp) where the stage moved any: the per-rank dataset
// nvme of /stage_<s> (columns bytes_read, bytes_written, seconds_waited: per step, the mean over
// the stage's steps), the summary.json member nvme_per_rank_per_step, and the closing table's
// line per stage. `zeromini inspect` describes the dataset (describe_nvme). While a stage runs,
// its transfers are spans for the run's observer (the timeline's storage track).
#pragma once

#include <hdf5.h>

#include <memory>
#include <string>

#include "core/spans.hpp"
#include "train/training_extensions.hpp"

namespace zm {

std::unique_ptr<TrainingExtension> make_nvme_figures();

// The run's span observer while a stage runs (null otherwise): the store reports each transfer,
// from its submit to the wait that saw it done, as a SpanKind::Storage span.
SpanObserver* nvme_span_observer();

// Rank 0's NVMe transfers per step of a stage of a results file, where it has them.
std::string describe_nvme(hid_t stage_group);

}  // namespace zm
