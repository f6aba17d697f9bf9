#include "zero/schedule_execution.hpp"

#include <algorithm>

#include "zero/engine.hpp"

namespace zm {

namespace {

// The type the engine holds `c`'s data in: the parameters' for gathers, else the reduce type.
template <typename Real>
PostContext post_context(const ScheduledCollective& c, ZeroEngineT<Real>& engine) {
  const DType held = c.role == ScheduleRole::StepStatistics ? DType::F32
                     : c.gathers()                          ? dtype_of<Real>()
                                                            : engine.reduce_dtype();
  return {engine.comms(), engine.team_shape(), held};
}

}  // namespace

template <typename Real>
CommRequest post_scheduled(const ScheduledCollective& c, ZeroEngineT<Real>& engine,
                           const ScheduledBuffers& buffers) {
  PostContext context = post_context(c, engine);
  return c.strategy->post(c, buffers, context);
}

template <typename Real>
void scheduled_arrived(const ScheduledCollective& c, ZeroEngineT<Real>& engine,
                       const ScheduledBuffers& buffers) {
  PostContext context = post_context(c, engine);
  c.strategy->arrived(c, buffers, context);
}

template <typename Real>
void finish_scheduled(ScheduleRole role, ZeroEngineT<Real>& engine) {
  std::vector<CollectiveStrategy*> finished;
  for (const ScheduledCollective& c : engine.schedule().collectives()) {
    if (c.role != role ||
        std::find(finished.begin(), finished.end(), c.strategy.get()) != finished.end())
      continue;
    finished.push_back(c.strategy.get());
    PostContext context = post_context(c, engine);
    c.strategy->finish(context);
  }
}

#define ZM_INSTANTIATE_EXECUTION(Real)                                                \
  template CommRequest post_scheduled(const ScheduledCollective&, ZeroEngineT<Real>&, \
                                      const ScheduledBuffers&);                       \
  template void scheduled_arrived(const ScheduledCollective&, ZeroEngineT<Real>&,     \
                                  const ScheduledBuffers&);                           \
  template void finish_scheduled(ScheduleRole, ZeroEngineT<Real>&);
ZM_FOR_EACH_REAL(ZM_INSTANTIATE_EXECUTION)
#undef ZM_INSTANTIATE_EXECUTION

}  // namespace zm
