// The model's collectives over its model-parallel group as the step's schedule lists them: where
// forward and backward reach each sync point (gpt_sync_uses), and the one path a scheme posts by
// (post_model_collective), which refuses a post the scheme did not declare, or one that differs
// from its declaration in operation, type or count.
#include <gtest/gtest.h>

#include <stdexcept>

#include "comm/communicator.hpp"
#include "common/kernel_test_util.hpp"
#include "common/test_watchdog.hpp"
#include "model/gpt.hpp"

namespace {

using zm::CommOp;
using zm::DType;
using zm::ModelSync;

int64_t uses_of(const std::vector<zm::ModelSyncUse>& uses, ModelSync point, int64_t rows,
                bool training) {
  for (const zm::ModelSyncUse& u : uses)
    if (u.point == point && u.rows == rows)
      return training ? u.per_micro_batch : u.per_forward_only;
  return -1;
}

TEST(ModelSyncUses, BlocksHeadChunksAndRecomputation) {
  zm::ModelConfig c;
  c.layers = 3;
  c.classifier_chunk = 5;  // 2 x 8 = 16 rows: three chunks of 5 and one of 1
  c.recompute = "blocks";
  const auto uses = zm::gpt_sync_uses(zm::ParamLayout(c), 2, 8);
  EXPECT_EQ(uses_of(uses, ModelSync::Embedding, 16, true), 1);
  EXPECT_EQ(uses_of(uses, ModelSync::AttentionOutput, 16, true), 6);  // recomputed in backward
  EXPECT_EQ(uses_of(uses, ModelSync::AttentionOutput, 16, false), 3);
  EXPECT_EQ(uses_of(uses, ModelSync::MlpInputGrad, 16, true), 3);
  EXPECT_EQ(uses_of(uses, ModelSync::MlpInputGrad, 16, false), 0);
  EXPECT_EQ(uses_of(uses, ModelSync::HeadStatistics, 5, true), 3);
  EXPECT_EQ(uses_of(uses, ModelSync::HeadStatistics, 1, false), 1);
  EXPECT_EQ(uses_of(uses, ModelSync::HeadInputGrad, 16, false), 0);
  c.recompute = "none";
  c.classifier_chunk = 0;  // the whole head at once
  const auto whole_head = zm::gpt_sync_uses(zm::ParamLayout(c), 2, 8);
  EXPECT_EQ(uses_of(whole_head, ModelSync::AttentionOutput, 16, true), 3);
  EXPECT_EQ(uses_of(whole_head, ModelSync::HeadStatistics, 16, true), 1);
  // A part of the model: its blocks' uses only, the embedding's where it starts the model and
  // the head's where it ends it.
  const auto middle = zm::gpt_sync_uses(zm::ParamLayout(c, nullptr, 1, {1, 1}), 2, 8);
  EXPECT_EQ(uses_of(middle, ModelSync::Embedding, 16, true), -1);
  EXPECT_EQ(uses_of(middle, ModelSync::AttentionOutput, 16, true), 1);
  EXPECT_EQ(uses_of(middle, ModelSync::HeadInputGrad, 16, true), -1);
  const auto last = zm::gpt_sync_uses(zm::ParamLayout(c, nullptr, 1, {1, -1}), 2, 8);
  EXPECT_EQ(uses_of(last, ModelSync::Embedding, 16, true), -1);
  EXPECT_EQ(uses_of(last, ModelSync::MlpInputGrad, 16, true), 2);
  EXPECT_EQ(uses_of(last, ModelSync::HeadStatistics, 16, true), 1);
}

class ModelPostTest : public ::testing::Test {
 protected:
  void SetUp() override {
    comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
    group = {comm.get(), comm->size(), comm->rank()};
  }
  std::unique_ptr<zm::Communicator> comm;
  zm::ModelParallelGroup group;
};

TEST_F(ModelPostTest, PostsWhatWasDeclared) {
  zm::testing::DeviceVec<float> data(std::vector<float>(8, 1.0f));
  zm::ModelPosts posts{{{CommOp::AllReduce, 8, 4}}};
  zm::post_model_collective(group, &posts, -1, CommOp::AllReduce, data.data(), data.data(), 8,
                            DType::F32);
  EXPECT_EQ(posts.posted, 1u);
  for (float x : data.get()) EXPECT_EQ(x, static_cast<float>(group.size));
  // A second post where one was declared.
  EXPECT_THROW(zm::post_model_collective(group, &posts, -1, CommOp::AllReduce, data.data(),
                                         data.data(), 8, DType::F32),
               std::logic_error);
  // Where nothing was declared at all.
  EXPECT_THROW(zm::post_model_collective(group, nullptr, -1, CommOp::AllReduce, data.data(),
                                         data.data(), 8, DType::F32),
               std::logic_error);
}

TEST_F(ModelPostTest, RefusesAPostUnlikeItsDeclaration) {
  zm::testing::DeviceVec<float> data(std::vector<float>(8 * group.size, 1.0f));
  const auto refused = [&](CommOp op, size_t count, DType type) {
    zm::ModelPosts posts{{{CommOp::AllReduce, 8, 4}}};
    EXPECT_THROW(
        zm::post_model_collective(group, &posts, -1, op, data.data(), data.data(), count, type),
        std::logic_error);
  };
  refused(CommOp::AllReduce, 6, DType::F32);   // another count
  refused(CommOp::AllReduce, 8, DType::BF16);  // another type
  refused(CommOp::AllGather, 8, DType::F32);   // another operation
}

}  // namespace
