// The module's registration (core/modules.hpp): the closing table of `zeromini run`, printed
// before the figure of merit (a run report, io/run_report.hpp), and summary.json, written beside
// results.h5 (a run command extension, train/command_extensions.hpp).
#include <Kokkos_Core.hpp>

#include "io/run_report.hpp"
#include "modules/run_summary/summary_json.hpp"
#include "modules/run_summary/summary_table.hpp"
#include "train/command_extensions.hpp"

namespace zm {

namespace {

class SummaryJson final : public RunCommandExtension {
 public:
  std::vector<CommandOption> options() override { return {}; }

  std::vector<std::string> write_results(const Deck& deck, const RunInvocation& run,
                                         const RunOutcome& outcome) override {
    const std::string path = deck.output.dir + "/summary.json";
    write_summary_json(path, deck, outcome,
                       {run.nodes, Kokkos::DefaultHostExecutionSpace().concurrency()});
    return {path};
  }
};

}  // namespace

void register_module_run_summary() {
  RunReport table;
  table.before_figure_of_merit = summary_table;
  add_run_report(std::move(table));
  add_run_command_extension(std::make_unique<SummaryJson>());
}

}  // namespace zm
