zm_module(offload
  DESCRIPTION "ZeRO-Offload: the optimizer state, and at stage 3 the parameter shard, in host memory; ZeRO-Infinity's activation checkpoints there too"
  KEYS zero.offload_optimizer zero.offload_params model.checkpoints
  NAMES "ZeRO-Offload" offloaded offloads offload_s HostAdamW)
