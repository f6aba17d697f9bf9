#include "comm/mesh_comms.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace zm {

CommLevel level_along(const ZeroMesh& mesh, const std::string& dim) {
  if (dim != kReplicateDim && dim != kShardDim) return CommLevel::ModelParallel;
  return dim == kReplicateDim && mesh.hybrid() ? CommLevel::InterGroup : CommLevel::IntraGroup;
}

CommLevel world_level(const ZeroMesh& mesh) {
  return mesh.hybrid() ? CommLevel::InterGroup : CommLevel::IntraGroup;
}

MeshComms::MeshComms(Communicator& world, const ZeroMesh& mesh) : mesh_(mesh), world_(&world) {
  ZM_ASSERT(mesh.world() == world.size(), "mesh of {} ranks, communicator of {}", mesh.world(),
            world.size());
  const DeviceMesh& m = mesh.mesh;
  along_.assign(static_cast<size_t>(m.ndims()), nullptr);
  // Innermost first: the group's communicator is split (and listed) before the replicas'.
  for (int d = m.ndims() - 1; d >= 0; --d) {
    Communicator* comm = make_along(d);
    along_[static_cast<size_t>(d)] = comm;
    if (comm)
      members_.push_back(
          {comm, comm == world_ ? world_level(mesh) : level_along(mesh, m.dim(d).name)});
  }
  const bool world_listed =
      std::any_of(members_.begin(), members_.end(),
                  [&](const Member& member) { return member.comm == world_; });
  if (!world_listed) members_.push_back({world_, world_level(mesh)});
}

Communicator& MeshComms::add_split(const std::string& name, Communicator& parent, int color,
                                   int key, CommLevel level) {
  ZM_ASSERT(added(name) == nullptr, "a second communicator named {}", name);
  members_.push_back({split(parent, color, key), level, name});
  return *members_.back().comm;
}

Communicator* MeshComms::added(const std::string& name) const {
  for (const Member& m : members_)
    if (!m.name.empty() && m.name == name) return m.comm;
  return nullptr;
}

Communicator* MeshComms::split(Communicator& parent, int color, int key) {
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Comm_split(parent.mpi_comm(), color, key, &comm);
  splits_.push_back(comm);
  owned_.push_back(make_communicator(world_->name(), comm, world_->watchdog()));
  return owned_.back().get();
}

Communicator* MeshComms::make_along(int d) {
  const DeviceMesh& m = mesh_.mesh;
  // A model dimension's traffic is the model's, counted apart from the world's statistics.
  const bool model = m.dim(d).name != kReplicateDim && m.dim(d).name != kShardDim;
  if (model && m.dim(d).size == 1) return nullptr;
  if (!mesh_.hybrid() && !model) {  // the shard dimension always has one: the engine's group
    if (m.dim(d).size == 1 && m.dim(d).name != kShardDim) return nullptr;
    if (m.dim(d).size == m.world()) return world_;
  }
  // Keyed by the world rank: a rank's rank along the dimension is its coordinate there.
  const int rank = world_->rank();
  return split(*world_, m.group_along(rank, d), rank);
}

MeshComms::~MeshComms() {
  for (auto& comm : owned_) comm.reset();
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  for (MPI_Comm& split : splits_)
    if (split != MPI_COMM_NULL) MPI_Comm_free(&split);
}

void MeshComms::set_timeout(double seconds) {
  for (const Member& m : members_) m.comm->set_timeout(seconds);
}

CommStats MeshComms::stats() const {
  CommStats total;
  for (const Member& m : members_) total += m.comm->stats();
  return total;
}

CommStats MeshComms::stats(CommLevel level) const {
  CommStats total;
  for (const Member& m : members_)
    if (m.level == level) total += m.comm->stats();
  return total;
}

}  // namespace zm
