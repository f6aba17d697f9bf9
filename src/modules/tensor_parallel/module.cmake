zm_module(tensor_parallel
  DESCRIPTION "Megatron tensor parallelism beside ZeRO: consecutive ranks split each block's matrices, the heads and the vocabulary (parallel.tp)"
  KEYS parallel.tp
  NAMES tp Megatron "vocabulary-parallel" vocab_parallel "row-parallel" "column-parallel")
