#include "train/training_extensions.hpp"

#include "core/registry.hpp"

namespace zm {

ZM_REGISTRY(TrainingExtensionFactory, add_training_extension, training_extension_factories)

std::vector<std::unique_ptr<TrainingExtension>> make_training_extensions() {
  std::vector<std::unique_ptr<TrainingExtension>> out;
  for (const TrainingExtensionFactory& make : training_extension_factories()) out.push_back(make());
  return out;
}

}  // namespace zm
