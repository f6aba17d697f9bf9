zm_module(rank_progress
  DESCRIPTION "The watchdog's diagnosis of a collective that timed out: the ranks that have not reached it and those stopped or hung, from progress slots every rank publishes (shared memory on a node, RMA across nodes)"
  NAMES ProgressSlots SlotsDiagnosis)
