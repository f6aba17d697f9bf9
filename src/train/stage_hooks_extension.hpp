// A training extension whose only part is one step hook per stage (train/training_extensions.hpp),
// made from the stage's outputs: what a module that measures each stage around its steps (and
// adds the figures to the stage's results) registers, without a class of its own.
#pragma once

#include <functional>
#include <memory>
#include <utility>

#include "train/training_extensions.hpp"

namespace zm {

using StageHookMaker = std::function<std::unique_ptr<StepHook>(const StageOutputs&)>;

namespace detail {
class StageHooksExtension final : public TrainingExtension {
 public:
  explicit StageHooksExtension(StageHookMaker make_hook) : make_hook_(std::move(make_hook)) {}
  void add_stage_hooks(const StageOutputs& outputs, StepHooks& hooks) override {
    hooks.add(make_hook_(outputs));
  }

 private:
  StageHookMaker make_hook_;
};
}  // namespace detail

inline std::unique_ptr<TrainingExtension> stage_hooks_extension(StageHookMaker make_hook) {
  return std::make_unique<detail::StageHooksExtension>(std::move(make_hook));
}

}  // namespace zm
