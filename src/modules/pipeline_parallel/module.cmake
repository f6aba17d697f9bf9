zm_module(pipeline_parallel
  DESCRIPTION "Pipeline parallelism (in progress): the blocks in consecutive stages (parallel.pp, parallel.pp_layers) run by the 1F1B schedule, at ZeRO stages 0-3, beside tensor parallelism, with checkpoints that load at any other layout"
  KEYS parallel.pp parallel.pp_layers
  NAMES 1F1B one_f_one_b PipeAction StageProgress)
