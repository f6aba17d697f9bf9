#include "bench_util.hpp"

#include <memory>

namespace zm::bench {

Communicator& world_communicator() {
  static std::unique_ptr<Communicator> comm;
  if (!comm) {
    comm = make_communicator("mpi", MPI_COMM_WORLD, watchdog());
    before_finalize([] { comm.reset(); });
  }
  return *comm;
}

Deck training_bench_deck(const std::vector<std::string>& overrides) {
  return parse_deck(
      "[model]\nlayers = 4\ndim = 256\nheads = 4\nseq_len = 128\nvocab = 512\n"
      "[train]\nmicro_batch = 8\nsteps = 1000000\n",
      "bench", overrides);
}

}  // namespace zm::bench
