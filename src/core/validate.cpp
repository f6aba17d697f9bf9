#include "core/validate.hpp"

#include <vector>

#include "core/registry.hpp"
#include "core/zero_mesh.hpp"

namespace zm {

ZM_REGISTRY(RunCheck, add_validation, run_checks)

void validate(const Deck& deck, const RunShape& shape, Validation purpose) {
  // The mesh's own checks: the model dimensions divide the ranks, the shard sizes divide the
  // data-parallel ranks, and the modules' mesh configurers' own checks.
  zero_mesh(deck, shape.stage, static_cast<int>(shape.ranks),
            static_cast<int>(shape.ranks_per_node));
  for (const RunCheck& check : run_checks()) check(deck, shape, purpose);
}

}  // namespace zm
