zm_module(token_shards
  DESCRIPTION "Training and evaluation on a file of real tokens: a token shard in llm.c's format (data.source)"
  NAMES "token shard" kShardMagic
  PROVIDES "data files")
