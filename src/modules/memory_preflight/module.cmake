zm_module(memory_preflight
  DESCRIPTION "Before each stage allocates anything, the planner's bytes per rank against the memory the rank can have: a run that cannot fit is refused with the figures"
  NAMES check_memory_fits MemoryPreflight host_available_bytes)
