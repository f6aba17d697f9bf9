#include "core/stage_spec.hpp"

#include "core/error.hpp"

namespace zm {

const StageSpec& stage_spec(int stage) {
  for (const StageSpec& spec : kStageSpecs)
    if (spec.stage == stage) return spec;
  fail("zero.stage = {}: expected an integer in 0..{}", stage, kStageSpecs.back().stage);
}

}  // namespace zm
