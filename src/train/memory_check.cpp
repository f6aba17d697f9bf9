#include "train/memory_check.hpp"

namespace zm {

std::vector<MemoryFigures> gather_memory_figures(const MemoryFigures& mine, Communicator& comm) {
  // Reporting traffic goes straight to MPI: it is not part of the training step's accounting.
  constexpr int kValues = 2 * kMemCategories + 1;
  std::vector<unsigned long long> send(kValues);
  for (int c = 0; c < kMemCategories; ++c) {
    send[static_cast<size_t>(c)] = mine.current[static_cast<size_t>(c)];
    send[static_cast<size_t>(kMemCategories + c)] = mine.peak[static_cast<size_t>(c)];
  }
  send[kValues - 1] = mine.peak_total;
  std::vector<unsigned long long> all(static_cast<size_t>(kValues * comm.size()));
  MPI_Gather(send.data(), kValues, MPI_UNSIGNED_LONG_LONG, all.data(), kValues,
             MPI_UNSIGNED_LONG_LONG, 0, comm.mpi_comm());
  std::vector<MemoryFigures> out;
  if (comm.rank() != 0) return out;
  for (int r = 0; r < comm.size(); ++r) {
    MemoryFigures f;
    const unsigned long long* v = all.data() + static_cast<size_t>(r * kValues);
    for (int c = 0; c < kMemCategories; ++c) {
      f.current[static_cast<size_t>(c)] = v[c];
      f.peak[static_cast<size_t>(c)] = v[kMemCategories + c];
    }
    f.peak_total = v[kValues - 1];
    out.push_back(f);
  }
  return out;
}

}  // namespace zm
