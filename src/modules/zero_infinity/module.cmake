zm_module(zero_infinity
  DESCRIPTION "ZeRO-Infinity: an NVMe tier below host memory (swap files read and written through io_uring with O_DIRECT, a thread pool where refused)"
  NAMES "ZeRO-Infinity" NVMe io_uring liburing SwapFile AsyncIo)
