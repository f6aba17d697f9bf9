// The lines rank 0 closes a run with: what the run reports print before it (io/run_report.hpp),
// the figure of merit, each stage's against the first's, and what the reports print after it.
#include "core/log.hpp"
#include "core/text.hpp"
#include "io/run_report.hpp"
#include "train/run.hpp"

namespace zm {

void print_closing_lines(const Deck& deck, const std::vector<StageResult>& results) {
  if (!log_is_root() || results.empty()) return;
  for (const RunReport& r : run_reports())
    if (r.before_figure_of_merit) log_root("{}", r.before_figure_of_merit(deck, results));
  const StageResult& last = results.back();
  log_root("\nFigure of merit: {} tokens/s per rank (stage {}, {} ranks, {})\n",
           thousands(last.tokens_per_second_per_rank), last.stage, results.front().ranks,
           deck.path);
  if (results.size() > 1) {
    for (const StageResult& s : results)
      log_root("  stage {}: {} tokens/s per rank, step time {:.2f}x stage {}\n", s.stage,
               thousands(s.tokens_per_second_per_rank),
               s.mean_step_seconds / results.front().mean_step_seconds, results.front().stage);
  }
  for (const RunReport& r : run_reports())
    if (r.after_figure_of_merit) log_root("{}", r.after_figure_of_merit(deck, results));
}

}  // namespace zm
