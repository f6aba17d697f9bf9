zm_module(inspect
  DESCRIPTION "Reading zeromini's HDF5 files back: zeromini inspect (results files, checkpoints) and zeromini export (GPT-2 parameters)"
  NAMES "zeromini inspect" "zeromini export" describe_hdf5 export_parameters)
