#include "plan/run_extensions.hpp"

#include <vector>

#include "core/registry.hpp"
#include "core/zero_mesh.hpp"

namespace zm {

void add_run_configurer(RunConfigurer configurer) {
  registry<RunConfigurer>().push_back(std::move(configurer));
}

RunExtensions run_extensions(const Deck& deck, int stage) {
  RunExtensions extensions;
  for (const RunConfigurer& configure : registry<RunConfigurer>())
    configure(deck, stage, extensions);
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
