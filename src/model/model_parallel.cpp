#include "model/model_parallel.hpp"

#include <iterator>

#include "core/error.hpp"
#include "core/text.hpp"

namespace zm {

const char* model_sync_name(ModelSync point) {
  static const char* const kNames[] = {"embedding",      "attention_output",     "mlp_output",
                                       "mlp_input_grad", "attention_input_grad", "head_statistics",
                                       "head_input_grad"};
  static_assert(std::size(kNames) == static_cast<size_t>(ModelSync::HeadInputGrad) + 1);
  return enum_name(kNames, point);
}

void post_model_collective(const ModelParallelGroup& group, ModelPosts* posts, int unit, CommOp op,
                           const void* send, void* recv, size_t count, DType type) {
  ZM_ASSERT(posts != nullptr && posts->posted < posts->declared.size() && group.comm != nullptr,
            "a model-parallel {} where the scheme declared none", comm_op_name(op));
  const ModelCollective& declared = posts->declared[posts->posted++];
  const auto whole = static_cast<int64_t>(op == CommOp::AllReduce ? count : count * group.size);
  ZM_ASSERT(declared.op == op && declared.element_bytes == static_cast<int>(dtype_size(type)) &&
                declared.count == whole,
            "a model-parallel collective declared as {} of {} x {}B, posted as {} of {} x {}B",
            comm_op_name(declared.op), declared.count, declared.element_bytes, comm_op_name(op),
            whole, dtype_size(type));
  const CommTag tag{unit, CommPurpose::ModelParallel};
  if (op == CommOp::AllReduce)
    group.comm->all_reduce_sum(recv, count, type, tag);
  else if (op == CommOp::AllGather)
    group.comm->all_gather(send, recv, count, type, tag);
  else
    ZM_ASSERT(false, "{} is not a model-parallel collective", comm_op_name(op));
}

}  // namespace zm
