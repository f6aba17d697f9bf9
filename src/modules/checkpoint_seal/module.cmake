zm_module(checkpoint_seal
  DESCRIPTION "Checkpoint files sealed with a checksum of every block (in an HDF5 user block) and verified whole, with their datasets' storage, before HDF5 parses them"
  NAMES "file integrity" ZMCKPT01 seal_file verify_file)
