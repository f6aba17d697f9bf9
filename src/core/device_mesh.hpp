// A device mesh: the ranks of a run as an array with named dimensions, and placements of buffers
// on it (the shape of torchtitan's DeviceMesh and FSDP2's placements). Rank r sits at its
// row-major coordinates, so the innermost dimension's ranks are consecutive; along each dimension
// the ranks differing only in that coordinate form one group (one communicator). A placement
// replicates a buffer along a dimension or shards it over it; over several dimensions it is cut
// into the product of their sizes, the first listed major: Shard over {shard, replicate} cuts it
// into shard-group shards, then each into one piece per replica.
#pragma once

#include <string>
#include <vector>

namespace zm {

struct MeshDim {
  std::string name;
  int size = 1;
};

class DeviceMesh {
 public:
  DeviceMesh() = default;  // one rank, no dimension
  // Outermost dimension first; names unique, sizes >= 1.
  explicit DeviceMesh(std::vector<MeshDim> dims);

  int ndims() const { return static_cast<int>(dims_.size()); }
  const MeshDim& dim(int d) const { return dims_[static_cast<size_t>(d)]; }
  // The index of a dimension by name; fails naming it when the mesh has none.
  int index_of(const std::string& name) const;
  bool has(const std::string& name) const;
  int size(const std::string& name) const { return dim(index_of(name)).size; }
  int world() const;  // ranks in the mesh: the product of the sizes

  // Rank `rank`'s coordinate along dimension d.
  int coordinate(int rank, int d) const;
  int coordinate(int rank, const std::string& name) const {
    return coordinate(rank, index_of(name));
  }
  // The group along dimension d that `rank` belongs to: the ranks sharing all its other
  // coordinates, numbered by those (row-major).
  int group_along(int rank, int d) const;

 private:
  std::vector<MeshDim> dims_;
};

enum class DimPlacement { Replicate, Shard };

class Placement {
 public:
  Placement() = default;  // replicated along every dimension
  // Sharded over `dims` (major first), replicated along the others.
  static Placement shard(std::vector<std::string> dims);

  DimPlacement along(const std::string& dim) const;
  bool shards(const std::string& dim) const { return along(dim) == DimPlacement::Shard; }
  bool replicated() const { return sharded_.empty(); }
  const std::vector<std::string>& sharded_dims() const { return sharded_; }
  bool operator==(const Placement& other) const { return sharded_ == other.sharded_; }
  bool operator!=(const Placement& other) const { return !(*this == other); }

 private:
  std::vector<std::string> sharded_;
};

// A buffer under a placement: cut into `count` equal pieces, of which a rank holds `index`.
struct Piece {
  int count = 1;
  int index = 0;
};
// The number of pieces (the product of the sharded dimensions' sizes; 1 when replicated).
int pieces(const DeviceMesh& mesh, const Placement& placement);
// The piece `rank` holds: its coordinates along the sharded dimensions, mixed-radix, major first.
int piece_index(const DeviceMesh& mesh, const Placement& placement, int rank);
Piece piece_of(const DeviceMesh& mesh, const Placement& placement, int rank);

}  // namespace zm
