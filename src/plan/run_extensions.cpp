#include "plan/run_extensions.hpp"

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

ParamLayout run_layout(const Deck& deck, int stage, int part) {
  const RunExtensions extensions = run_extensions(deck, stage);
  int64_t slices = 1;
  for (const ModelDimension& d : model_dimensions())
    if (d.slices) slices *= deck.value<int64_t>(d.key);
  const ModelParallelScheme* scheme = extensions.model_parallel;
  return ParamLayout(deck.model, scheme, scheme != nullptr ? static_cast<int>(slices) : 1,
                     extensions.model_part ? extensions.model_part(part) : ModelPart{});
}

}  // namespace zm
