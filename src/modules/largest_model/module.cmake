zm_module(largest_model
  DESCRIPTION "zeromini plan --largest: the deepest model of the deck's width that fits a device, per device count x stage x sharding x recomputation (and a module's axis)"
  NAMES LargestAxis LargestModel LargestSharding LargestOption LargestMode plan_largest
        largest_axes)
