#include "modules/timeline/trace_file.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>

#include "comm/agree.hpp"
#include "comm/watchdog.hpp"
#include "comm/watched_mpi.hpp"
#include "core/build_info.hpp"
#include "core/error.hpp"
#include "core/text.hpp"
#include "core/timer.hpp"
#include "io/durable_file.hpp"

namespace zm {

namespace {

const char* comm_purpose_name(CommPurpose purpose) {
  static const char* const kNames[] = {"other", "grad_reduce", "param_gather", "stats",
                                       "model_parallel"};
  return enum_name(kNames, purpose);
}

const char* kind_category(TraceKind kind) {
  switch (kind) {
    case TraceKind::Step:
      return "step";
    case TraceKind::Compute:
      return "compute";
    case TraceKind::Wait:
      return "wait";
    case TraceKind::Io:
      return "io";
    case TraceKind::Collective:
      return "collective";
    case TraceKind::Transfer:
      return "transfer";
    case TraceKind::Evaluation:
      return "evaluation";
    case TraceKind::Storage:
      return "storage";
  }
  return "other";
}

// "forward block 3" -> "block 3"; "" for events that are no unit's forward or backward.
std::string unit_name(const std::string& name) {
  for (const char* use : {"forward ", "backward "}) {
    const std::string prefix(use);
    if (name.compare(0, prefix.size(), prefix) == 0) return name.substr(prefix.size());
  }
  return "";
}

std::string metadata(int ranks) {
  std::string out;
  for (int r = 0; r < ranks; ++r) {
    out += fmt::format(
        "{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{0},\"args\":{{\"name\":\"rank "
        "{0}\"}}}},\n"
        "{{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":{0},\"args\":{{\"sort_index\":{0}}}"
        "}},\n"
        "{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{0},\"tid\":0,\"args\":{{\"name\":"
        "\"compute\"}}}},\n"
        "{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{0},\"tid\":1,"
        "\"args\":{{\"name\":\"communication\"}}}},\n"
        "{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{0},\"tid\":2,"
        "\"args\":{{\"name\":\"host transfers\"}}}},\n"
        "{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{0},\"tid\":3,"
        "\"args\":{{\"name\":\"storage transfers\"}}}}",
        r);
    out += r + 1 < ranks ? ",\n" : "";
  }
  return out;
}

std::string number_list(const std::vector<double>& values, size_t stride, size_t first) {
  std::string out = "[";
  for (size_t i = first; i < values.size(); i += stride)
    out += fmt::format("{}{:.9g}", i == first ? "" : ", ", values[i]);
  return out + "]";
}

}  // namespace

TraceWriter::TraceWriter(const Deck& deck, Communicator& comm, Tracer& tracer)
    : comm_(comm.mpi_comm()), watchdog_(comm.watchdog()), tracer_(tracer) {
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &ranks_);
  path_ = deck.output.dir + "/trace.json";
  partial_ = path_ + ".partial";
  offset_ = clock_offset_to_rank0(comm_);
  origin_ = wall_seconds();
  watched_bcast(watchdog_, &origin_, 1, MPI_DOUBLE, 0, comm_, "the trace's start time");
  const double mine[2] = {offset_.seconds, offset_.uncertainty};
  std::vector<double> offsets(static_cast<size_t>(2 * ranks_));
  watched_gather(watchdog_, mine, 2, MPI_DOUBLE, offsets.data(), 0, comm_,
                 "the gather of clock offsets");
  const std::string trace_steps = deck.value<std::string>("output.trace_steps");
  std::vector<StepRange> steps;
  parse_step_ranges(trace_steps, &steps);  // checked with the deck
  tracer_.configure(true, steps, rank_);
  if (rank_ == 0) {
    file_ = std::fopen(partial_.c_str(), "w");
    if (!file_) error_ = fmt::format("{}: cannot create: {}", partial_, errno_text(errno));
    write_text(fmt::format(
        "{{\"displayTimeUnit\": \"ms\",\n\"otherData\": {{\"zeromini_revision\": {}, \"deck\": {}, "
        "\"ranks\": {}, \"trace_steps\": {}, \"clock_offset_seconds\": {}, "
        "\"clock_uncertainty_seconds\": {}}},\n\"traceEvents\": [\n{}",
        quoted(git_revision()), quoted(deck.path), ranks_, quoted(trace_steps),
        number_list(offsets, 2, 0), number_list(offsets, 2, 1), metadata(ranks_)));
  }
  agree_on_write("the start of the trace file");
}

TraceWriter::~TraceWriter() {
  tracer_.configure(false, {}, rank_);
  if (file_) std::fclose(file_);
}

void TraceWriter::write_text(const std::string& text) {
  if (!file_ || !error_.empty()) return;
  if (std::fwrite(text.data(), 1, text.size(), file_) != text.size())
    error_ = fmt::format("{}: write failed: {}", partial_, errno_text(errno));
}

void TraceWriter::agree_on_write(const std::string& what) {
  const Agreement agreement = agree(watchdog_, comm_, rank_ == 0 ? error_ : "", what);
  if (!agreement.ok()) throw IoError(agreement.message);
}

void TraceWriter::write_window() {
  Tracer& tracer = tracer_;
  if (!tracer.active()) return;  // the same steps are traced on every rank
  std::vector<TraceEvent> events = tracer.take();
  for (TraceEvent& e : events) {
    e.begin += offset_.seconds;
    e.end += offset_.seconds;
  }
  const int bytes = static_cast<int>(events.size() * sizeof(TraceEvent));
  std::vector<int> counts(static_cast<size_t>(ranks_)), displacements(counts.size());
  watched_gather(watchdog_, &bytes, 1, MPI_INT, counts.data(), 0, comm_,
                 "the gather of trace sizes");
  int total = 0;
  for (size_t r = 0; r < counts.size(); ++r) {
    displacements[r] = total;
    total += counts[r];
  }
  std::vector<TraceEvent> all(rank_ == 0 ? static_cast<size_t>(total) / sizeof(TraceEvent) : 0);
  // As watched_gather, with variable counts (counts and displacements matter on rank 0 only).
  const std::string what = "the gather of trace events";
  MPI_Request request = MPI_REQUEST_NULL;
  const int64_t sequence = watchdog_.sequence_for(comm_);
  const int code = MPI_Igatherv(events.data(), bytes, MPI_BYTE, all.data(), counts.data(),
                                displacements.data(), MPI_BYTE, 0, comm_, &request);
  if (code != MPI_SUCCESS) abort_on_mpi_error(code, what);
  watched_wait(watchdog_, request, what, sequence);
  if (rank_ == 0) {
    std::string text;
    for (const TraceEvent& e : all) text += json_of(e);
    write_text(text);
    if (file_ && std::fflush(file_) != 0 && error_.empty())
      error_ = fmt::format("{}: write failed: {}", partial_, errno_text(errno));
  }
  agree_on_write("the trace write");
}

// One event as JSON lines (each ending ",\n" after the first, so that the array stays valid).
std::string TraceWriter::json_of(const TraceEvent& e) const {
  const auto kind = static_cast<TraceKind>(e.kind);
  const double ts = (e.begin - origin_) * 1e6, dur = (e.end - e.begin) * 1e6;
  const std::string name = quoted(e.name);
  std::string args = fmt::format("\"stage\":{},\"step\":{}", e.stage, e.step);
  std::string out;
  if (kind == TraceKind::Collective) {
    const std::string id = fmt::format("\"{}:{}\"", e.rank, e.id);
    const char* op = comm_op_name(static_cast<CommOp>(e.op));
    out = fmt::format(
        ",\n{{\"ph\":\"b\",\"cat\":\"collective\",\"name\":{},\"id\":{},\"pid\":{},"
        "\"tid\":1,\"ts\":{:.3f},\"args\":{{{},\"op\":\"{}\",\"bytes\":{:.0f},\"unit\":{},"
        "\"purpose\":\"{}\"}}}}"
        ",\n{{\"ph\":\"e\",\"cat\":\"collective\",\"name\":{},\"id\":{},\"pid\":{},"
        "\"tid\":1,\"ts\":{:.3f},\"args\":{{{}}}}}",
        name, id, e.rank, ts, args, op, e.bytes, e.unit,
        comm_purpose_name(static_cast<CommPurpose>(e.purpose)), name, id, e.rank, ts + dur, args);
    return out;
  }
  if (kind == TraceKind::Wait)
    args += fmt::format(",\"id\":\"{}:{}\",\"op\":\"{}\"", e.rank, e.id,
                        comm_op_name(static_cast<CommOp>(e.op)));
  if (kind == TraceKind::Compute && e.unit >= 0) {
    args += fmt::format(",\"unit\":{}", e.unit);
    const std::string unit = unit_name(e.name);
    if (!unit.empty()) args += fmt::format(",\"unit_name\":{}", quoted(unit));
  }
  if (kind == TraceKind::Compute && e.micro >= 0) args += fmt::format(",\"micro\":{}", e.micro);
  if ((kind == TraceKind::Transfer || kind == TraceKind::Storage) && e.unit >= 0)
    args += fmt::format(",\"unit\":{}", e.unit);
  // Host-device copies on their own track (tid 2), transfers to and from drives on theirs (tid 3),
  // the rest on the compute track.
  const int track = kind == TraceKind::Transfer ? 2 : kind == TraceKind::Storage ? 3 : 0;
  return fmt::format(
      ",\n{{\"ph\":\"X\",\"cat\":\"{}\",\"name\":{},\"pid\":{},\"tid\":{},\"ts\":{:.3f},"
      "\"dur\":{:.3f},\"args\":{{{}}}}}",
      kind_category(kind), name, e.rank, track, ts, dur, args);
}

void TraceWriter::finish() {
  if (finished_) return;
  finished_ = true;
  write_window();
  if (rank_ == 0 && file_) {
    write_text("\n]}\n");
    if (std::fclose(file_) != 0 && error_.empty())
      error_ = fmt::format("{}: close failed: {}", partial_, errno_text(errno));
    file_ = nullptr;
    if (error_.empty()) error_ = sync_file(partial_);
    if (error_.empty() && std::rename(partial_.c_str(), path_.c_str()) != 0)
      error_ = fmt::format("{}: cannot rename to {}: {}", partial_, path_, errno_text(errno));
  }
  agree_on_write("the end of the trace file");
}

}  // namespace zm
