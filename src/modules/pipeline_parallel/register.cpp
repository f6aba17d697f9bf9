// The module's registration (core/modules.hpp). Nothing to register yet: the schedule
// (one_f_one_b.hpp) is the first part of pipeline parallelism; the deck key parallel.pp and the
// stage driver that runs a model part (model/layout.hpp: ModelPart) per stage come next.
namespace zm {

void register_module_pipeline_parallel() {}

}  // namespace zm
