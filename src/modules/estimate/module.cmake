zm_module(estimate
  DESCRIPTION "The run's time estimate before its first step: the planner on the --machine file or on this machine measured at start-up, the warning before a long run, the notice of a long first step"
  KEYS output.long_run_s
  NAMES run_estimate RunEstimate estimate_run long_run_s FirstStepNotice "first-step notice"
        measure_machine "measured at start-up")
