// What a module says of a whole run, from the results of all its stages (io/run_records.hpp),
// beside what its figures say of each stage (io/stage_figures.hpp): members of summary.json's top
// level, after "stages" and before "figure_of_merit", and text of the run's closing lines
// (train/run.hpp print_closing_lines): before the figure of merit (e.g. a table of the stages),
// after the stages' throughput lines of that table, and after the figure of merit. The core
// prints the text before and after the figure of merit; whatever writes summary.json or prints
// the throughput lines asks for the rest. Registered at start-up (core/modules.hpp); each part may
// be left empty, and says nothing ("" or no member) where it has nothing to say of the run.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/deck.hpp"
#include "io/run_records.hpp"

namespace zm {

struct RunReport {
  using Members =
      std::function<std::vector<std::string>(const Deck&, const std::vector<StageResult>&)>;
  using Text = std::function<std::string(const Deck&, const std::vector<StageResult>&)>;
  // Each member as the JSON text `"key": value`; the writer indents it and separates them.
  Members summary_members;
  // Rank 0's text, lines ending with "\n".
  Text before_figure_of_merit;
  Text after_throughput;
  Text after_figure_of_merit;
};
void add_run_report(RunReport added);
const std::vector<RunReport>& run_reports();

// The figures of type T among a stage's (StageResult::figures), or nullptr: for a module that
// reads back its own.
template <typename T>
const T* stage_figures_of(const StageResult& stage) {
  for (const auto& f : stage.figures)
    if (const T* found = dynamic_cast<const T*>(f.get())) return found;
  return nullptr;
}

}  // namespace zm
