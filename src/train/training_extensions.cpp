#include "train/training_extensions.hpp"

namespace zm {

namespace {
std::vector<TrainingExtensionFactory>& training_extension_registry() {
  static std::vector<TrainingExtensionFactory> factories;
  return factories;
}
}  // namespace

void add_training_extension(TrainingExtensionFactory factory) {
  training_extension_registry().push_back(std::move(factory));
}

std::vector<std::unique_ptr<TrainingExtension>> make_training_extensions() {
  std::vector<std::unique_ptr<TrainingExtension>> out;
  for (const TrainingExtensionFactory& make : training_extension_registry()) out.push_back(make());
  return out;
}

}  // namespace zm
