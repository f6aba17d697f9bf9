// The device mesh and placements: coordinates, the groups along each dimension, and the pieces a
// placement cuts a buffer into, on a 3-dimensional mesh (a tensor-parallel dimension declared
// beside the two of hybrid sharding) and on the ZeRO mesh of hybrid sharding and hpZ.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "core/device_mesh.hpp"
#include "core/error.hpp"
#include "core/zero_mesh.hpp"

namespace {

const zm::DeviceMesh kMesh3({{"replicate", 2}, {"shard", 3}, {"tp", 4}});

TEST(DeviceMesh, CoordinatesAreRowMajorWithTheLastDimensionFastest) {
  EXPECT_EQ(kMesh3.world(), 24);
  EXPECT_EQ(kMesh3.index_of("tp"), 2);
  // Rank 23 = 1 * 12 + 2 * 4 + 3.
  EXPECT_EQ(kMesh3.coordinate(23, "replicate"), 1);
  EXPECT_EQ(kMesh3.coordinate(23, "shard"), 2);
  EXPECT_EQ(kMesh3.coordinate(23, "tp"), 3);
  EXPECT_EQ(kMesh3.coordinate(6, "shard"), 1);
  EXPECT_EQ(kMesh3.coordinate(6, "tp"), 2);
  for (int rank = 0; rank < kMesh3.world(); ++rank)
    EXPECT_EQ((kMesh3.coordinate(rank, 0) * 3 + kMesh3.coordinate(rank, 1)) * 4 +
                  kMesh3.coordinate(rank, 2),
              rank);
  EXPECT_THROW(kMesh3.index_of("pp"), zm::Error);
}

TEST(DeviceMesh, GroupsAlongADimensionShareEveryOtherCoordinate) {
  for (int d = 0; d < kMesh3.ndims(); ++d) {
    std::map<int, std::vector<int>> groups;  // group -> its ranks, in rank order
    for (int rank = 0; rank < kMesh3.world(); ++rank)
      groups[kMesh3.group_along(rank, d)].push_back(rank);
    ASSERT_EQ(static_cast<int>(groups.size()), kMesh3.world() / kMesh3.dim(d).size);
    for (const auto& [group, ranks] : groups) {
      ASSERT_EQ(static_cast<int>(ranks.size()), kMesh3.dim(d).size);
      for (size_t i = 0; i < ranks.size(); ++i) {
        EXPECT_EQ(kMesh3.coordinate(ranks[i], d), static_cast<int>(i));  // ordered as in the world
        for (int other = 0; other < kMesh3.ndims(); ++other) {
          if (other == d) continue;
          EXPECT_EQ(kMesh3.coordinate(ranks[i], other), kMesh3.coordinate(ranks[0], other));
        }
      }
    }
  }
  // Along tp the groups are runs of 4 consecutive ranks; along replicate, ranks 12 apart.
  EXPECT_EQ(kMesh3.group_along(5, 2), kMesh3.group_along(7, 2));
  EXPECT_NE(kMesh3.group_along(3, 2), kMesh3.group_along(4, 2));
  EXPECT_EQ(kMesh3.group_along(5, 0), kMesh3.group_along(17, 0));
}

TEST(Placement, PiecesAndPieceIndicesOnThreeDimensions) {
  const zm::Placement replicated = zm::Placement();
  const zm::Placement tp = zm::Placement::shard({"tp"});
  const zm::Placement hpz = zm::Placement::shard({"shard", "replicate"});
  const zm::Placement all = zm::Placement::shard({"tp", "shard", "replicate"});
  EXPECT_EQ(zm::pieces(kMesh3, replicated), 1);
  EXPECT_EQ(zm::pieces(kMesh3, tp), 4);
  EXPECT_EQ(zm::pieces(kMesh3, hpz), 6);
  EXPECT_EQ(zm::pieces(kMesh3, all), 24);
  EXPECT_EQ(tp.along("tp"), zm::DimPlacement::Shard);
  EXPECT_EQ(tp.along("shard"), zm::DimPlacement::Replicate);
  // Rank 23 at (1, 2, 3): major first.
  EXPECT_EQ(zm::piece_index(kMesh3, replicated, 23), 0);
  EXPECT_EQ(zm::piece_index(kMesh3, tp, 23), 3);
  EXPECT_EQ(zm::piece_index(kMesh3, hpz, 23), 2 * 2 + 1);
  EXPECT_EQ(zm::piece_index(kMesh3, all, 23), (3 * 3 + 2) * 2 + 1);
  EXPECT_EQ(zm::piece_index(kMesh3, hpz, 6), 1 * 2 + 0);
  // Every piece is held by the ranks that differ only along replicated dimensions: as many as
  // the world has ranks per piece.
  for (const zm::Placement& p : {replicated, tp, hpz, all}) {
    std::map<int, std::set<int>> holders;
    for (int rank = 0; rank < kMesh3.world(); ++rank) {
      const zm::Piece piece = zm::piece_of(kMesh3, p, rank);
      ASSERT_GE(piece.index, 0);
      ASSERT_LT(piece.index, piece.count);
      holders[piece.index].insert(rank);
    }
    ASSERT_EQ(static_cast<int>(holders.size()), zm::pieces(kMesh3, p));
    for (const auto& [index, ranks] : holders) {
      EXPECT_EQ(static_cast<int>(ranks.size()), kMesh3.world() / zm::pieces(kMesh3, p));
      for (int rank : ranks)
        for (int d = 0; d < kMesh3.ndims(); ++d) {
          if (!p.shards(kMesh3.dim(d).name)) continue;
          EXPECT_EQ(kMesh3.coordinate(rank, d), kMesh3.coordinate(*ranks.begin(), d));
        }
    }
  }
}

// The ZeRO mesh: 16 ranks in 2 groups of 8; the stages' placements, and hpZ's sub-shards.
TEST(ZeroMesh, StagesAndHpzArePlacements) {
  const zm::ZeroMesh hybrid = zm::hybrid_mesh(16, 8, false);
  EXPECT_TRUE(hybrid.hybrid());
  EXPECT_FALSE(hybrid.sub_sharded());
  EXPECT_EQ(hybrid.groups(), 2);
  EXPECT_EQ(hybrid.sub_shards(), 1);
  const zm::Placement shard = zm::Placement::shard({zm::kShardDim});
  const zm::ModelPlacements s0 = hybrid.placements(zm::stage_spec(0));
  EXPECT_TRUE(s0.params.replicated() && s0.grads.replicated() && s0.optim.replicated());
  const zm::ModelPlacements s1 = hybrid.placements(zm::stage_spec(1));
  EXPECT_TRUE(s1.params.replicated() && s1.grads.replicated());
  EXPECT_EQ(s1.optim, shard);
  const zm::ModelPlacements s2 = hybrid.placements(zm::stage_spec(2));
  EXPECT_TRUE(s2.params.replicated());
  EXPECT_EQ(s2.grads, shard);
  const zm::ModelPlacements s3 = hybrid.placements(zm::stage_spec(3));
  EXPECT_EQ(s3.params, shard);
  EXPECT_EQ(s3.optim, shard);

  const zm::ZeroMesh hpz = zm::hybrid_mesh(16, 8, true);
  EXPECT_TRUE(hpz.sub_sharded());
  EXPECT_EQ(hpz.sub_shards(), 2);
  const zm::ModelPlacements h3 = hpz.placements(zm::stage_spec(3));
  EXPECT_EQ(h3.params, shard);  // parameters over one dimension
  EXPECT_EQ(h3.grads, shard);
  EXPECT_EQ(h3.optim, zm::Placement::shard({zm::kShardDim, zm::kReplicateDim}));  // over both
  EXPECT_EQ(zm::pieces(hpz.mesh, h3.optim), 16);
  // Rank 11 is rank 3 of group 1: its sub-shard is the second of its group shard's two.
  EXPECT_EQ(zm::piece_index(hpz.mesh, h3.params, 11), 3);
  EXPECT_EQ(zm::piece_index(hpz.mesh, h3.optim, 11), 3 * 2 + 1);
  // With one group hpZ is plain stage 3.
  EXPECT_FALSE(zm::hybrid_mesh(8, 8, true).sub_sharded());
}

}  // namespace
