// A stage's throughput in results.h5 (/stage_<s>), and read back for `zeromini inspect`:
//   attributes  tokens_per_second (all ranks), step_seconds (rank 0's mean over the timed steps),
//               model_flops_per_token, hardware_flops_per_token (model/flops.hpp),
//               model_flops_per_step, hardware_flops_per_step (all ranks),
//               tflops_per_device, tflops_total, hardware_tflops_per_device (model FLOPs, or
//               hardware FLOPs, / step_seconds);
//               with a peak only: peak_tflops_per_device, peak_source, mfu, hfu
//   datasets    comm_bus_bytes_per_step, comm_in_flight_seconds, comm_busbw   (ranks, 5) per
//               timed step: ring bytes, seconds in flight, their ratio in bytes/s (NaN: none)
#pragma once

#include <hdf5.h>

#include <string>

#include "io/results_file.hpp"

namespace zm {

void write_stage_throughput(hid_t group, const ResultsStage& s, hsize_t ranks);

// "    throughput ...\n" lines for one stage; "" when the stage has none.
std::string describe_stage_throughput(hid_t group);

}  // namespace zm
