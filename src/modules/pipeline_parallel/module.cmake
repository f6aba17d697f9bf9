zm_module(pipeline_parallel
  DESCRIPTION "Pipeline parallelism (in progress): the 1F1B schedule as data, each stage's work and each boundary's transfers, checked in a simulation of every stage"
  NAMES 1F1B one_f_one_b PipeAction)
