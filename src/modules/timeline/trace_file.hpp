// <output.dir>/trace.json: the timeline of the traced steps (output.trace, output.trace_steps) in
// the Chrome trace-event format, which Perfetto (ui.perfetto.dev) and chrome://tracing open.
//
//   one process per rank (pid = rank), with two tracks: tid 0 "compute" (steps, each unit's
//   forward and backward, gradient statistics, optimizer, waits on collectives, checkpoint and
//   results I/O) and tid 1 "communication" (each collective from post to completion, an async
//   "b"/"e" pair with its op, bytes, unit and purpose).
//   ts and dur in microseconds on rank 0's clock, from the start of the run; every rank's events
//   are moved onto it by the offset measured at start-up (clock_sync.hpp).
//
// Memory stays bounded by one step: after each traced step rank 0 gathers every rank's events
// and appends them to trace.json.partial, which becomes trace.json when the run ends (a run that
// dies leaves the partial file, every traced step up to the last one in it).
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "core/deck.hpp"
#include "modules/timeline/clock_sync.hpp"
#include "modules/timeline/trace.hpp"

namespace zm {

class TraceWriter {
 public:
  // Collective: measures clock offsets; rank 0 starts the file. Configures `tracer` (the run's)
  // and takes its windows.
  TraceWriter(const Deck& deck, Communicator& comm, Tracer& tracer);
  ~TraceWriter();
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  // Collective: appends the tracer's window (if it was active) and closes it. Throws IoError on
  // every rank when rank 0 could not write.
  void write_window();
  // Collective: the last window, then trace.json in place of the partial file.
  void finish();

  const std::string& path() const { return path_; }

 private:
  std::string json_of(const TraceEvent& event) const;
  void write_text(const std::string& text);  // rank 0
  void agree_on_write(const std::string& what);

  MPI_Comm comm_;
  Watchdog& watchdog_;  // the communicator's, for the gathers and agreements
  Tracer& tracer_;
  int rank_ = 0, ranks_ = 1;
  std::string path_, partial_;
  double origin_ = 0.0;  // rank 0's clock at start, the timeline's zero
  ClockOffset offset_;   // this rank's
  std::FILE* file_ = nullptr;
  std::string error_;  // rank 0: the first write failure
  bool finished_ = false;
};

}  // namespace zm
