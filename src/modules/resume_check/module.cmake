zm_module(resume_check
  DESCRIPTION "Warnings when a resumed run changes the learning-rate schedule, the global batch, the data order or the optimizer against the run that wrote its checkpoint"
  NAMES resume_changes)
