// What this binary was built from and against (`zeromini --version`, results-file attributes).
#pragma once

#include <string>

#include "core/deck.hpp"

namespace zm {

std::string git_revision();
std::string zeromini_version();     // the project's version number
std::string kokkos_backends();      // e.g. "Serial" or "Cuda, Serial"
std::string mpi_library_version();  // first line of MPI_Get_library_version
std::string hdf5_version();
std::string version_report();  // the multi-line `zeromini --version` text

}  // namespace zm
