// The ranks of a communicator that share this rank's node (MPI_COMM_TYPE_SHARED), in the parent's
// order, as a communicator freed with this object.
#pragma once

#include <mpi.h>

namespace zm {

class NodeComm {
 public:
  NodeComm() = default;  // no communicator (MPI_COMM_NULL)
  // Collective over `comm`.
  explicit NodeComm(MPI_Comm comm);
  ~NodeComm() { release(); }
  NodeComm(NodeComm&& other) noexcept;
  NodeComm& operator=(NodeComm&& other) noexcept;
  NodeComm(const NodeComm&) = delete;
  NodeComm& operator=(const NodeComm&) = delete;

  MPI_Comm get() const { return comm_; }
  int rank() const { return rank_; }  // among the ranks of this node
  int size() const { return size_; }  // ranks on this node

 private:
  void release();
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
};

}  // namespace zm
