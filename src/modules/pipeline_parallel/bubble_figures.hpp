// The bubble as a run measures it, step by step: a stage's time waiting for its neighbours (the
// waits of the transfers between stages, record.comm's broadcasts) against that and its forward
// and backward compute, summed over the timed steps. It goes into the stage's attributes in
// results.h5, summary.json and the closing table (rank 0's), beside 1F1B's (P - 1) / (m + P - 1).
// (No step_times column: that would add one to every run's results.)
#pragma once

namespace zm::pipeline {

void add_bubble_figures();

}  // namespace zm::pipeline
