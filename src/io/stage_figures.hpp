// Figures a module adds to a stage's results, beside the core's: values per step and rank
// (columns of results.h5's step_times), series of rows recorded after some of the steps, values
// per rank for the whole stage, attributes of the stage, members of its summary.json entry,
// columns and text of the closing table, and lines that describe them when results.h5 is read.
//
// A module makes one StageFigures per stage (from a step hook, train/training_extensions.hpp)
// and adds it to the stage's StageResult (io/run_records.hpp), where the results writer,
// summary.json and the closing table ask for it. What a module registers at start-up (columns,
// series, descriptions) is process-wide and read-only after.
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <functional>
#include <string>
#include <variant>
#include <vector>

namespace zm {

// A value of one step_times column (add_step_time_columns).
struct StepValue {
  std::string column;
  double value = 0.0;
};

// A dataset of /stage_<s> with one row per rank, and the attributes results.h5 gives such
// datasets: units, columns, dimensions ("rank", "column").
struct RankDataset {
  std::string name;
  std::vector<std::string> columns;
  std::string units;
  std::vector<double> values;  // ranks x columns, row-major
};

// An attribute of /stage_<s>: a number, an integer (written as a 64-bit integer) or a string.
struct StageAttribute {
  std::string name;
  std::variant<double, int64_t, std::string> value = 0.0;
};

struct Throughput;

// Where a module's members go in the stage's entry of summary.json: the entry itself, or its
// "throughput" object.
enum class SummaryObject { Stage, Throughput };

// A column of the closing table's stage rows, placed after the core's column headed `after`
// ("comm", "opt", ...); `cell` is its text for this stage, right-aligned to `width`.
struct TableColumn {
  std::string after;
  std::string heading;
  int width = 8;
  std::string cell;
};

class StageFigures {
 public:
  virtual ~StageFigures() = default;
  // This rank's values of step `step` (0-based, the step just recorded) for the step_times
  // columns the module registered; a column without a value is NaN.
  virtual std::vector<StepValue> step_values(int64_t /*step*/) const { return {}; }
  // Once the stage's throughput is measured (io/run_records.hpp), before its results are written:
  // what the figures derive from it.
  virtual void throughput_measured(const Throughput& /*throughput*/) {}
  // Rank 0, once the stage is over: its datasets and attributes in results.h5.
  virtual std::vector<RankDataset> datasets() const { return {}; }
  virtual std::vector<StageAttribute> attributes() const { return {}; }
  // Rank 0: members of the stage's summary.json entry or of its throughput object, each as the
  // JSON text `"key": value` (with the line breaks and indentation it should have); the writer
  // separates them with commas.
  virtual std::vector<std::string> summary_members(SummaryObject /*object*/) const { return {}; }
  // Rank 0: the closing table's columns, what the throughput lines' heading says of the
  // figures they end with, and the end of the stage's throughput line (e.g. "; ...").
  virtual std::vector<TableColumn> table_columns() const { return {}; }
  virtual std::string throughput_heading() const { return ""; }
  virtual std::string throughput_line_end() const { return ""; }
  // Rank 0: lines the closing table prints under its rows ("" for none).
  virtual std::string table_note() const { return ""; }
};

// step_times' columns (seconds per step and rank): the core's (forward, backward, comm_wait,
// optimizer, total), then those the modules added, in the order they were added.
void add_step_time_columns(const std::vector<std::string>& columns);
const std::vector<std::string>& step_time_columns();
// The core's columns.
constexpr int kCoreStepTimeColumns = 5;

// A series of a stage's rows that a module records after some of its steps (e.g. a figure
// measured every N steps): datasets of /stage_<s> with one row per record, `step` (the 1-based
// step after which it was recorded, 64-bit integers) and one of numbers per value. A resumed run
// keeps the earlier runs' rows as it keeps the core's (ResultsWriter::add_series_row appends).
struct StageSeries {
  std::string step;                 // the dataset of the steps, which names the series
  std::vector<std::string> values;  // the datasets of the values, in a row's order
  std::vector<std::string> units;   // their `units` attribute, "" for none (one per value)
};
void add_stage_series(StageSeries series);
const std::vector<StageSeries>& stage_series();

// Lines that describe a module's figures of one stage of a results file, from the stage's group
// ("" when it has nothing of them), printed after the stage's throughput by a reader of the file.
using StageDescription = std::function<std::string(hid_t stage_group)>;
void add_stage_description(StageDescription describe);
const std::vector<StageDescription>& stage_descriptions();

}  // namespace zm
