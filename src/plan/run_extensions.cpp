#include "plan/run_extensions.hpp"

#include <vector>

#include "core/zero_mesh.hpp"

namespace zm {

namespace {
std::vector<RunConfigurer>& configurers() {
  static std::vector<RunConfigurer> registered;
  return registered;
}
}  // namespace

void add_run_configurer(RunConfigurer configurer) {
  configurers().push_back(std::move(configurer));
}

RunExtensions run_extensions(const Deck& deck, int stage) {
  RunExtensions extensions;
  for (const RunConfigurer& configure : configurers()) configure(deck, stage, extensions);
  return extensions;
}

const AttentionKernels& attention_kernels(const RunExtensions& extensions) {
  return extensions.attention != nullptr ? *extensions.attention : plain_attention();
}

ParamLayout run_layout(const Deck& deck, int stage) {
  const ModelParallelScheme* scheme = run_extensions(deck, stage).model_parallel;
  return ParamLayout(deck.model, scheme,
                     scheme != nullptr ? static_cast<int>(model_parallel_size(deck)) : 1);
}

}  // namespace zm
