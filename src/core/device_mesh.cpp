#include "core/device_mesh.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace zm {

DeviceMesh::DeviceMesh(std::vector<MeshDim> dims) : dims_(std::move(dims)) {
  for (size_t d = 0; d < dims_.size(); ++d) {
    ZM_ASSERT(dims_[d].size >= 1, "mesh dimension {} of size {}", dims_[d].name, dims_[d].size);
    for (size_t e = 0; e < d; ++e)
      ZM_ASSERT(dims_[e].name != dims_[d].name, "mesh dimension {} declared twice", dims_[d].name);
  }
}

int DeviceMesh::index_of(const std::string& name) const {
  for (int d = 0; d < ndims(); ++d)
    if (dim(d).name == name) return d;
  fail("device mesh: no dimension named \"{}\"", name);
}

bool DeviceMesh::has(const std::string& name) const {
  return std::any_of(dims_.begin(), dims_.end(), [&](const MeshDim& m) { return m.name == name; });
}

int DeviceMesh::world() const {
  int ranks = 1;
  for (const MeshDim& m : dims_) ranks *= m.size;
  return ranks;
}

int DeviceMesh::coordinate(int rank, int d) const {
  ZM_ASSERT(rank >= 0 && rank < world(), "rank {} outside a mesh of {}", rank, world());
  int stride = 1;
  for (int inner = ndims() - 1; inner > d; --inner) stride *= dim(inner).size;
  return rank / stride % dim(d).size;
}

int DeviceMesh::group_along(int rank, int d) const {
  int group = 0;
  for (int other = 0; other < ndims(); ++other)
    if (other != d) group = group * dim(other).size + coordinate(rank, other);
  return group;
}

Placement Placement::shard(std::vector<std::string> dims) {
  Placement p;
  for (size_t i = 0; i < dims.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      ZM_ASSERT(dims[i] != dims[j], "placement shards twice over {}", dims[i]);
  p.sharded_ = std::move(dims);
  return p;
}

DimPlacement Placement::along(const std::string& dim) const {
  const bool sharded = std::find(sharded_.begin(), sharded_.end(), dim) != sharded_.end();
  return sharded ? DimPlacement::Shard : DimPlacement::Replicate;
}

int pieces(const DeviceMesh& mesh, const Placement& placement) {
  int count = 1;
  for (const std::string& name : placement.sharded_dims()) count *= mesh.size(name);
  return count;
}

int piece_index(const DeviceMesh& mesh, const Placement& placement, int rank) {
  int index = 0;
  for (const std::string& name : placement.sharded_dims())
    index = index * mesh.size(name) + mesh.coordinate(rank, name);
  return index;
}

Piece piece_of(const DeviceMesh& mesh, const Placement& placement, int rank) {
  return {pieces(mesh, placement), piece_index(mesh, placement, rank)};
}

}  // namespace zm
