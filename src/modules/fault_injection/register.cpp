// The module's registration (core/modules.hpp): the fault the environment plans, as handlers of
// the core's fault points (core/fault_points.hpp) and, for the faults at a step's start, a step
// hook (train/training_extensions.hpp). An environment that plans no fault registers nothing.
#include <fmt/format.h>
#include <unistd.h>

#include <any>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>

#include "core/fault_points.hpp"
#include "io/durable_file.hpp"
#include "kernels/elementwise.hpp"
#include "modules/fault_injection/planned_fault.hpp"
#include "train/training_extensions.hpp"
#include "zero/engine.hpp"

namespace zm {

namespace {

// Stops the whole process (SIGSTOP), as a stopped or hung node: its watchdog thread stops beating.
void stop_process(const char* where) {
  say(fmt::format("this rank stops (SIGSTOP) in {}", where));
  std::raise(SIGSTOP);
}

// kill, stall, error: at the start of the planned step, before the trainer's step runs.
class StepStartFault final : public StepHook {
 public:
  StepStartFault(PlannedFault plan, int rank) : plan_(std::move(plan)), rank_(rank) {}
  void before_step(int64_t step) override {
    if (step + 1 != plan_.step || rank_ != plan_.rank) return;
    if (plan_.kind == "kill") {
      say("this rank kills itself");  // a crashed node
      std::raise(SIGKILL);
    }
    if (plan_.kind == "stall") {
      say("this rank stalls");  // a hung node: no exit
      for (;;) pause();
    }
    throw std::logic_error("fault injection: an internal error");  // a bug on one rank: exit 1
  }

 private:
  PlannedFault plan_;
  int rank_;
};

class StepStartFaults final : public TrainingExtension {
 public:
  explicit StepStartFaults(PlannedFault plan) : plan_(std::move(plan)) {}
  void add_stage_hooks(const StageOutputs& outputs, StepHooks& hooks) override {
    hooks.add(std::make_unique<StepStartFault>(plan_, outputs.trainer.comms().world().rank()));
  }

 private:
  PlannedFault plan_;
};

// nan: NaN in the first gradient element this rank owns, after the last backward (the point's
// subject is the trainer's typed engine); false where the engine is not of type Real.
template <typename Real>
bool poison_gradient(const std::any& subject) {
  ZeroEngineT<Real>* const* typed = std::any_cast<ZeroEngineT<Real>*>(&subject);
  if (!typed) return false;
  ZeroEngineT<Real>& engine = **typed;
  const auto [begin, end] = engine.owned_gradients(0);
  if (end > begin)
    engine.with_reduced_grads(0, begin, [&](auto* grads) {
      using Grad = std::remove_pointer_t<decltype(grads)>;
      kernels::fill(engine.team_shape(), grads, 1, Grad(std::nanf("")));
    });
  return true;
}

// Calls `act` with the point's subject at `point` on the planned rank and step.
void at_planned(const char* point, const PlannedFault& plan,
                std::function<void(const std::any& subject)> act) {
  add_fault_handler(point, [plan, act](int rank, int64_t step, const std::any& subject) {
    if (plan.at(rank, step)) act(subject);
  });
}

void add_planned_fault(const PlannedFault& plan) {
  const std::string& kind = plan.kind;
  if (kind == "kill" || kind == "stall" || kind == "error") {
    add_training_extension([plan] { return std::make_unique<StepStartFaults>(plan); });
  } else if (kind == "nan") {
    at_planned("step.gradients", plan, [](const std::any& engine) {
      if (poison_gradient<float>(engine)) return;
#if ZEROMINI_HAVE_BF16
      poison_gradient<bf16>(engine);
#endif
    });
  } else if (kind == "enospc_checkpoint" || kind == "enospc_results") {
    // In the rank's part of the checkpoint's data, or in rank 0's results file.
    at_planned(kind == "enospc_checkpoint" ? "checkpoint.written" : "results.write", plan,
               [](const std::any& file) {
                 throw std::runtime_error(fmt::format("{}: writing failed: {} (injected)",
                                                      std::any_cast<std::string>(file),
                                                      errno_text(ENOSPC)));
               });
  } else if (kind == "stall_checkpoint") {
    at_planned("checkpoint.unit", plan,
               [](const std::any&) { stop_process("the checkpoint write"); });
  } else if (kind == "stall_gather") {
    at_planned("results.gather", plan, [](const std::any&) { stop_process("the results gather"); });
  }
}

}  // namespace

void register_module_fault_injection() {
  const PlannedFault plan = planned_fault();
  if (!plan.kind.empty()) add_planned_fault(plan);
  // Rank 0 dies after checkpoint k's data is written and sealed, before it is published.
  if (const char* crash = std::getenv("ZEROMINI_TEST_CRASH_BEFORE_RENAME")) {
    const int64_t step = std::atoll(crash);
    add_fault_handler("checkpoint.publish", [step](int rank, int64_t at_step, const std::any&) {
      if (at_step == step && rank == 0) std::raise(SIGKILL);
    });
  }
  // A start-up that does not return: MPI_Init begins this many seconds late.
  if (const char* stall = std::getenv("ZEROMINI_TEST_STALL_MPI_INIT")) {
    const double seconds = std::atof(stall);
    add_fault_handler("mpi.init", [seconds](int, int64_t, const std::any&) {
      std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    });
  }
}

}  // namespace zm
