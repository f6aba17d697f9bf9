zm_module(thread_report
  DESCRIPTION "The thread-placement report at start-up: each rank's thread pools and cores, and a warning when ranks oversubscribe a node's cores")
