#include "modules/pipeline_parallel/stage_driver.hpp"

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "comm/phase.hpp"
#include "core/error.hpp"
#include "core/stage_spec.hpp"
#include "model/held_token_grads.hpp"
#include "modules/pipeline_parallel/one_f_one_b.hpp"
#include "plan/planner.hpp"

namespace zm::pipeline {

namespace {

// The added communicators' names: boundary b's is of round b % 2.
std::string boundary_name(int boundary) {
  return boundary % 2 == 0 ? "pp_even" : "pp_odd";
}
const char* const kTiedName = "pp_tied";

// Boundary b's communicator: its two ranks, stages b and b + 1 in order.
Communicator& boundary_pair(const MeshComms& comms, int boundary) {
  Communicator* pair = comms.added(boundary_name(boundary));
  ZM_ASSERT(pair != nullptr && pair->size() == 2, "no communicator for boundary {}", boundary);
  return *pair;
}

// This rank's coordinate along the pipeline, the stages, and an index of its other coordinates
// (the pipeline it belongs to).
struct Place {
  int stage, stages, pipeline;
  // The first and last stages each hold the tied embedding: the first its gradient from the
  // embedding, the last from the head. Their sum, on both, is the whole model's.
  bool holds_tied() const { return stages > 1 && (stage == 0 || stage == stages - 1); }
};
Place place_of(const MeshComms& comms) {
  const ZeroMesh& mesh = comms.mesh();
  const int rank = comms.world().rank();
  const int stage = mesh.mesh.coordinate(rank, kPipeDim), stages = mesh.mesh.size(kPipeDim);
  return {stage, stages, mesh.mesh.group_along(rank, mesh.mesh.index_of(kPipeDim))};
}

// The 1F1B step of one stage, in compute type Real.
template <typename Real>
class StageStep {
 public:
  StageStep(const MicroStepsCall<Real>& call, std::vector<std::unique_ptr<GPT<Real>>>& extra)
      : call_(call),
        place_(place_of(call.comms)),
        progress_(place_.stage, place_.stages, static_cast<int>(call.micro_batches)),
        core_hook_(call.engine.before_reduction_hook()) {
    // Slot 0 is the trainer's model; the others are made once and kept for the next steps.
    while (static_cast<int>(extra.size()) + 1 < progress_.slots())
      extra.push_back(call.another_model());
    models_.push_back(&call.model);
    for (int s = 1; s < progress_.slots(); ++s)
      models_.push_back(extra[static_cast<size_t>(s - 1)].get());
    batches_.resize(models_.size());
    sends_.resize(models_.size());
    if (place_.holds_tied())
      call_.engine.set_before_reduction([this](int unit, void* grads, int64_t n, DType dtype) {
        before_reduction(unit, grads, n, dtype);
      });
  }
  ~StageStep() { call_.engine.set_before_reduction(core_hook_); }
  StageStep(const StageStep&) = delete;
  StageStep& operator=(const StageStep&) = delete;

  double run() {
    const ParamLayout& layout = call_.engine.partition().layout();
    double loss = 0.0;
    while (const auto action = progress_.next_action()) {
      post_ready();
      current_ = *action;
      current_done_ = false;
      const int micro = action->micro;
      const auto slot = static_cast<size_t>(progress_.slot(micro));
      GPT<Real>& model = *models_[slot];
      if (action->work == PipeWork::Forward) {
        wait_sends(slot);  // the slot's output and input gradient were sent from its buffers
        batches_[slot] = call_.load(model, micro);
        // The head makes gradients in its forward (model.classifier_chunk): its micro-step begins
        // there, and its backward follows at once (the last stage holds one micro-batch).
        // Elsewhere the forward is a forward-only pass over the parameters (stage 3 gathers the
        // forward's units) and the micro-step begins at the backward, over the units that follow.
        if (layout.heads())
          call_.engine.begin_micro_step(micro, call_.micro_batches);
        else
          call_.engine.begin_forward_only();
        receive(*action);
        {
          Phase forward(call_.context, PhaseSpec("forward").timed(call_.record.times.forward));
          loss += model.forward(call_.engine, batches_[slot]);
        }
        if (!layout.heads()) call_.engine.end_forward_only();
      } else {
        if (!layout.heads()) call_.engine.begin_micro_step(micro, call_.micro_batches, true);
        receive(*action);
        Phase backward(call_.context, PhaseSpec("backward").timed(call_.record.times.backward));
        model.backward(call_.engine, batches_[slot]);
      }
      finish_action();
    }
    post_ready();
    for (size_t slot = 0; slot < sends_.size(); ++slot) wait_sends(slot);
    ZM_ASSERT(
        progress_.all_posted(StageProgress::Previous) && progress_.all_posted(StageProgress::Next),
        "stage {}: transfers left unposted", place_.stage);
    {
      Phase finish(call_.context, PhaseSpec("finish_backward").span(SpanKind::Compute));
      call_.engine.finish_backward();
    }
    check_posted();
    return loss;
  }

 private:
  // Posts every transfer the schedule allows now, on both boundaries, in each one's order.
  void post_ready() {
    for (const auto side : {StageProgress::Previous, StageProgress::Next}) {
      while (const auto t = progress_.postable(side)) {
        const bool sending = progress_.sends(side, *t);
        const auto slot = static_cast<size_t>(progress_.slot(t->micro));
        GPT<Real>& model = *models_[slot];
        Real* data = nullptr;
        if (side == StageProgress::Previous)
          data = t->what == Crossing::Activation ? model.part_input()
                                                 : const_cast<Real*>(model.part_input_grad());
        else
          data = t->what == Crossing::Activation ? const_cast<Real*>(model.part_output())
                                                 : model.part_output_grad();
        // A gradient lands in the buffer the slot's last input gradient was sent from.
        if (!sending && t->what == Crossing::Gradient) wait_sends(slot);
        const int boundary = side == StageProgress::Previous ? place_.stage - 1 : place_.stage;
        Communicator& pair = boundary_pair(call_.comms, boundary);
        // The pair's ranks are its stages in order: activations come from rank 0.
        const int root = t->what == Crossing::Activation ? 0 : 1;
        CommRequest request = pair.ibroadcast(data, elements(), dtype_of<Real>(), root);
        boundary_posts_.push_back({CommOp::Broadcast, static_cast<int64_t>(elements()),
                                   static_cast<int>(sizeof(Real)), pair.size()});
        if (sending)
          sends_[slot].push_back(std::move(request));
        else
          receives_[{static_cast<int>(t->what), t->micro}] = std::move(request);
        progress_.posted(side);
      }
    }
  }
  // Waits for what `action` needs from a neighbour (posted by post_ready).
  void receive(const PipeAction& action) {
    const auto need = progress_.needs(action);
    if (!need) return;
    const auto it = receives_.find({static_cast<int>(need->second.what), need->second.micro});
    ZM_ASSERT(it != receives_.end(), "stage {}: micro-batch {}'s transfer was not posted",
              place_.stage, action.micro);
    it->second.wait();
    receives_.erase(it);
  }
  void wait_sends(size_t slot) {
    for (CommRequest& r : sends_[slot]) r.wait();
    sends_[slot].clear();
  }
  size_t elements() const { return static_cast<size_t>(call_.model.part_elements()); }
  // The action under way is done: what it sends is posted at once (the tied sum below waits for
  // the other end of the pipeline, which may need it).
  void finish_action() {
    if (current_done_) return;
    current_done_ = true;
    progress_.done(current_);
    post_ready();
  }
  // The engine's hook at the two ends, just before a unit's data-parallel reduction. The tied
  // embedding's two parts are summed, on both ends, into what the whole model would reduce: the
  // head's part and the embedding's. Where the first stage holds its token part until then
  // (model/held_token_grads.hpp) it adds it after the sum (the trainer's hook, core_hook_), as
  // the whole model adds it after every head part, and sends the result to the last stage.
  // At stages 2-3 the unit is reduced every micro-step, so the last stage waits there for the
  // first stage's backward of each micro-batch: the price of that stage with a pipeline.
  void before_reduction(int unit, void* grads, int64_t n, DType dtype) {
    const ParamLayout& layout = call_.engine.partition().layout();
    const bool tied = unit == layout.embedding_unit();
    if (tied) {
      finish_action();  // what the backward sends is posted first: the other end may need it
      tied_pair().all_reduce_sum(grads, static_cast<size_t>(n), dtype);
      tied_posts_.push_back({CommOp::AllReduce, n, static_cast<int>(dtype_size(dtype)), 2});
    }
    if (core_hook_) core_hook_(unit, grads, n, dtype);
    if (tied && holds_token_grads(stage_spec(call_.engine.stage()), call_.micro_batches)) {
      const int64_t count = layout.vocab_rows() * layout.config().dim;
      void* wte = static_cast<char*>(grads) + layout.wte_offset() * dtype_size(dtype);
      tied_pair().broadcast(wte, static_cast<size_t>(count), dtype, 0);
      tied_posts_.push_back({CommOp::Broadcast, count, static_cast<int>(dtype_size(dtype)), 2});
    }
  }
  Communicator& tied_pair() const {
    Communicator* tied = call_.comms.added(kTiedName);
    ZM_ASSERT(tied != nullptr && tied->size() == 2, "no communicator for the tied embedding");
    return *tied;
  }
  // What the step posted is what the planner prices (stage_traffic), post by post: the
  // boundaries' broadcasts in their order, then the tied embedding's.
  void check_posted() {
    PlannedCollectives posted = boundary_posts_;
    posted.insert(posted.end(), tied_posts_.begin(), tied_posts_.end());
    const ZeroEngineT<Real>& e = call_.engine;
    const PlannedCollectives planned =
        stage_traffic(place_.stage, place_.stages, call_.micro_batches, call_.model.part_elements(),
                      e.partition(), e.options(), e.mesh(), e.stage());
    ZM_ASSERT(posted.size() == planned.size(), "stage {}: {} posts, {} planned", place_.stage,
              posted.size(), planned.size());
    for (size_t i = 0; i < planned.size(); ++i)
      ZM_ASSERT(posted[i].op == planned[i].op && posted[i].count == planned[i].count &&
                    posted[i].element_bytes == planned[i].element_bytes &&
                    posted[i].ranks == planned[i].ranks,
                "stage {}: post {} is not the planned one", place_.stage, i);
  }

  const MicroStepsCall<Real>& call_;
  Place place_;
  StageProgress progress_;
  ZeroEngine::BeforeReduction core_hook_;  // the engine's hook before this step's (the trainer's)
  PipeAction current_{};                   // the action under way
  bool current_done_ = true;
  std::vector<GPT<Real>*> models_;  // one per slot
  std::vector<Batch> batches_;
  std::vector<std::vector<CommRequest>> sends_;          // per slot, in flight
  std::map<std::pair<int, int>, CommRequest> receives_;  // by (what, micro), in flight
  PlannedCollectives boundary_posts_, tied_posts_;       // this step's posts, in order
};

// Loss-only forwards through the stages (an evaluation), one micro-batch after another: each
// stage receives a micro-batch's activation from the one before, runs its blocks and sends its
// output on; the last computes the loss. Each boundary posts its micro-batches in order on both
// sides, as broadcasts rooted at the earlier stage, each waited for at once.
template <typename Real>
double forward_only_pass(const MicroStepsCall<Real>& call) {
  const Place place = place_of(call.comms);
  GPT<Real>& model = call.model;
  auto transfer = [&](int boundary, Real* data) {
    boundary_pair(call.comms, boundary)
        .ibroadcast(data, static_cast<size_t>(model.part_elements()), dtype_of<Real>(), 0)
        .wait();
  };
  double loss = 0.0;
  for (int64_t e = 0; e < call.micro_batches; ++e) {
    const Batch batch = call.load(model, e);
    if (place.stage > 0) transfer(place.stage - 1, model.part_input());
    call.engine.begin_forward_only();
    loss += model.forward(call.engine, batch, ForwardPass::LossOnly);
    call.engine.end_forward_only();
    if (place.stage + 1 < place.stages)
      transfer(place.stage, const_cast<Real*>(model.part_output()));
  }
  return loss;
}

class StageDriver final : public MicroStepDriver {
 public:
  double run(const MicroStepsCall<float>& call) override {
    return StageStep<float>(call, float_models_).run();
  }
  double forward_only(const MicroStepsCall<float>& call) override {
    return forward_only_pass(call);
  }
#if ZEROMINI_HAVE_BF16
  double run(const MicroStepsCall<bf16>& call) override {
    return StageStep<bf16>(call, bf16_models_).run();
  }
  double forward_only(const MicroStepsCall<bf16>& call) override {
    return forward_only_pass(call);
  }
#endif

 private:
  std::vector<std::unique_ptr<GPT<float>>> float_models_;
#if ZEROMINI_HAVE_BF16
  std::vector<std::unique_ptr<GPT<bf16>>> bf16_models_;
#endif
};

}  // namespace

void add_pipe_communicators(MeshComms& comms) {
  const Place p = place_of(comms);
  const int world = comms.world().size(), rank = comms.world().rank();
  // Round r pairs stages (b, b + 1) for boundaries b of parity r; a rank outside every pair of a
  // round is alone (its own color, beyond every pair's).
  for (int round = 0; round < 2; ++round) {
    const int boundary = p.stage % 2 == round ? p.stage : p.stage - 1;
    const bool paired = boundary >= 0 && boundary + 1 < p.stages;
    const int color = paired ? p.pipeline * p.stages + boundary : world * p.stages + rank;
    comms.add_split(boundary_name(round), comms.world(), color, p.stage, CommLevel::ModelParallel);
  }
  comms.add_split(kTiedName, comms.world(), p.holds_tied() ? p.pipeline : world + rank, p.stage,
                  CommLevel::ModelParallel);
}

PlannedCollectives stage_traffic(int stage, int stages, int64_t micro_batches, int64_t activation,
                                 const Partition& partition, const ZeroOptions& options,
                                 const ZeroMesh& mesh, int zero_stage) {
  // The nodes a pair of stages spans. A pipeline's stages are `stride` ranks apart (the product of
  // the sizes of the mesh's dimensions inside pp): those of the first pipeline, which every
  // pipeline shares where a node holds whole pipelines or a pipeline whole nodes.
  const int per_node = static_cast<int>(ranks_on_a_node(mesh));
  int stride = 1;
  for (int d = mesh.mesh.index_of(kPipeDim) + 1; d < mesh.mesh.ndims(); ++d)
    stride *= mesh.mesh.dim(d).size;
  auto span = [per_node, stride](int first, int last) {
    return first * stride / per_node == last * stride / per_node ? NodeSpan{1, 2} : NodeSpan{2, 1};
  };
  PlannedCollectives posts;
  // Each boundary: an activation forward and a gradient back per micro-batch.
  for (const int boundary : {stage - 1, stage})
    if (boundary >= 0 && boundary + 1 < stages)
      posts.insert(posts.end(), static_cast<size_t>(2 * micro_batches),
                   {CommOp::Broadcast, activation, element_bytes(options.policy.compute), 2,
                    CommLevel::ModelParallel, 0, span(boundary, boundary + 1)});
  // At the two ends, before each reduction of the embedding unit (once a step at stages 0-1, every
  // micro-step at 2-3): the tied sum of the whole unit, and where the first stage holds its token
  // part, the token embedding's rows sent on to the last stage.
  const ParamLayout& layout = partition.layout();
  if (stages > 1 && (layout.embeds() || layout.heads())) {
    const StageSpec spec = stage_spec(zero_stage);
    const int bytes = element_bytes(options.policy.reduce);
    posts.insert(posts.end(), static_cast<size_t>(spec.shards_gradients() ? micro_batches : 1),
                 {CommOp::AllReduce, partition.unit(layout.embedding_unit()).padded, bytes, 2,
                  CommLevel::ModelParallel, 0, span(0, stages - 1)});
    if (holds_token_grads(spec, micro_batches))
      posts.push_back({CommOp::Broadcast, layout.vocab_rows() * layout.config().dim, bytes, 2,
                       CommLevel::ModelParallel, 0, span(0, stages - 1)});
  }
  return posts;
}

std::unique_ptr<MicroStepDriver> make_stage_driver() {
  return std::make_unique<StageDriver>();
}

}  // namespace zm::pipeline
