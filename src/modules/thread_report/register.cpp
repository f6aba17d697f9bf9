// The module's registration (core/modules.hpp): the report, printed before the first step of
// `zeromini run`.
#include "comm/communicator.hpp"
#include "core/log.hpp"
#include "modules/thread_report/node_threads.hpp"
#include "train/command_extensions.hpp"

namespace zm {

namespace {

// Collective over every rank of the run; rank 0's report is the one printed.
class ThreadReport final : public RunCommandExtension {
 public:
  std::vector<CommandOption> options() override { return {}; }

  RunFigures before_first_step(const Deck&, const RunInvocation&, Communicator& comm) override {
    log_root("{}", thread_report(thread_placement(comm.mpi_comm())));
    return {};
  }
};

}  // namespace

void register_module_thread_report() {
  add_run_command_extension(std::make_unique<ThreadReport>());
}

}  // namespace zm
