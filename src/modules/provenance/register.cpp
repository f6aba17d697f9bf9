// The module's registration (core/modules.hpp): the run's manifest, gathered when the results
// file is opened and written as its /manifest group (a results group, io/results_file.hpp).
#include "modules/provenance/manifest.hpp"

namespace zm {

void register_module_provenance() {
  add_manifest_group();
}

}  // namespace zm
