#include "train/training_extensions.hpp"

#include "core/registry.hpp"

namespace zm {

void add_training_extension(TrainingExtensionFactory factory) {
  registry<TrainingExtensionFactory>().push_back(std::move(factory));
}

std::vector<std::unique_ptr<TrainingExtension>> make_training_extensions() {
  std::vector<std::unique_ptr<TrainingExtension>> out;
  for (const TrainingExtensionFactory& make : registry<TrainingExtensionFactory>())
    out.push_back(make());
  return out;
}

}  // namespace zm
