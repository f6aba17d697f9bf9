// What a module says of a whole run, from the results of all its stages (io/run_records.hpp):
// members of summary.json's top level (after "stages", before "figure_of_merit"), and text of the
// run's closing lines (miniapp/cmd_run.cpp, print_closing_lines) before the figure of merit,
// after the closing table's throughput lines, and after the figure of merit. Registered at start-up
// (core/modules.hpp); each part may be empty, or say nothing of a run ("" or no member).
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

}  // namespace zm
