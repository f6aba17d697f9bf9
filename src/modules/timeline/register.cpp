// The module's registration (core/modules.hpp): its deck keys, its step_times columns and
// inspect line (io/stage_figures.hpp), and its part of every run (timeline_run.hpp).
#include "core/deck_keys.hpp"
#include "io/stage_figures.hpp"
#include "modules/timeline/exposure_figures.hpp"
#include "modules/timeline/step_ranges.hpp"
#include "modules/timeline/timeline_run.hpp"
#include "train/training_extensions.hpp"

namespace zm {

void register_module_timeline() {
  add_deck_keys(
      {deck_keys::boolean("timeline", "output", "trace", false,
                          "write trace.json (Chrome trace-event format: Perfetto, "
                          "chrome://tracing), the timeline of output.trace_steps on every rank"),
       deck_keys::custom("timeline", "output", "trace_steps", "2-3",
                         "a step number (from 1) or a string of steps and ranges such as "
                         "\"2-3,10\"",
                         check_step_list,
                         "the steps output.trace records (1-based), e.g. 3 or \"2-3,10\"")});
  add_step_time_columns({"comm_exposed", "comm_in_flight"});
  add_stage_description(describe_busbw);
  add_training_extension(make_timeline_run);
}

}  // namespace zm
