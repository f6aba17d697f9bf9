zm_module(zeropp
  DESCRIPTION "ZeRO++: the secondary partition of the parameters (hpZ), quantized weight gathers (qwZ) and quantized gradient exchanges (qgZ), also across the secondary shards and in two hops by node; the bytes that leave a node"
  KEYS zero.secondary_shard_size zero.quantize_weights zero.quantize_block zero.quantize_grads zero.error_feedback zero.grad_rounding
  NAMES "ZeRO++" hpZ qgZ qwZ int8_all_gather quantized_all_to_all quantized_exchange)
