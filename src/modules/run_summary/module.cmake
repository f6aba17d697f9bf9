zm_module(run_summary
  DESCRIPTION "The run's secondary reports: the closing table of zeromini run (a row per stage, throughput lines) and summary.json"
  REQUIRES provenance)
