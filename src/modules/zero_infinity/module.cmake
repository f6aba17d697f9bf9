zm_module(zero_infinity
  DESCRIPTION "ZeRO-Infinity: an NVMe tier below host memory (the optimizer state and stage 3's parameter shard in swap files read and written through io_uring with O_DIRECT, a thread pool where refused)"
  KEYS zero.nvme_dir zero.nvme_engine
  NAMES "ZeRO-Infinity" NVMe io_uring liburing SwapFile AsyncIo NvmeStore nvme_dir
  PROVIDES "zero.offload_optimizer nvme" "zero.offload_params nvme" "machine table [nvme]")
