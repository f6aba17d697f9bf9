zm_module(mpi_staging
  DESCRIPTION "The MPI backend on a GPU whose memory the MPI library cannot read: device buffers staged through pinned host buffers, and the library's GPU-awareness (ZEROMINI_MPI_GPU_AWARE overrides it)"
  NAMES ZEROMINI_MPI_GPU_AWARE StagingPool StagingLease HostStaging "staging pool" gpu_aware
        GpuAwareDecision
  PROVIDES "device staging")
