zm_module(evaluation
  DESCRIPTION "Evaluation on a held-out split between steps, and the time to a target validation loss"
  KEYS train.eval_every train.eval_batches train.target_loss data.val_source data.val_fraction
  NAMES "time to target" time_to_target "held-out" "held out" eval_every eval_batches target_loss
        val_source val_fraction loss_floor "loss floor" "validation loss")
