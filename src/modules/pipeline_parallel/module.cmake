zm_module(pipeline_parallel
  DESCRIPTION "Pipeline parallelism (in progress): the blocks in consecutive stages (parallel.pp) run by the 1F1B schedule, at ZeRO stages 0-3, beside tensor parallelism, so far without checkpoints"
  KEYS parallel.pp
  NAMES 1F1B one_f_one_b PipeAction StageProgress)
