#include "comm/node_split.hpp"

#include <utility>

namespace zm {

NodeComm::NodeComm(MPI_Comm comm) {
  int parent_rank = 0;
  MPI_Comm_rank(comm, &parent_rank);
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, parent_rank, MPI_INFO_NULL, &comm_);
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
}

NodeComm::NodeComm(NodeComm&& other) noexcept {
  *this = std::move(other);
}

NodeComm& NodeComm::operator=(NodeComm&& other) noexcept {
  if (this != &other) {
    release();
    comm_ = std::exchange(other.comm_, MPI_COMM_NULL);
    rank_ = std::exchange(other.rank_, 0);
    size_ = std::exchange(other.size_, 1);
  }
  return *this;
}

// A communicator that outlives MPI_Finalize (one held by a static, or by an object destroyed
// after the runtime) cannot be freed any more, and need not be.
void NodeComm::release() {
  if (comm_ == MPI_COMM_NULL) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Comm_free(&comm_);
  comm_ = MPI_COMM_NULL;
}

}  // namespace zm
