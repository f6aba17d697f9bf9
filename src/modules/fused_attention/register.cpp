// The module's registration (core/modules.hpp): its deck key, and the kernels a run of it gets.
#include "core/deck_keys.hpp"
#include "modules/fused_attention/fused_attention_kernels.hpp"
#include "plan/run_extensions.hpp"

namespace zm {

void register_module_fused_attention() {
  add_deck_keys(
      {deck_keys::choice("fused_attention", "model", "attention", "fused", {"fused", "reference"},
                         "attention kernels: \"fused\" runs tiles with an online softmax "
                         "and stores no T x T matrix; \"reference\" stores the "
                         "probabilities")});
  // "reference" leaves the core's plain kernels.
  add_run_configurer([](const Deck& deck, int /*stage*/, RunExtensions& extensions) {
    if (deck.value<std::string>("model.attention") == "fused")
      extensions.attention = &fused_attention_kernels();
  });
}

}  // namespace zm
