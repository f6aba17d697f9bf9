zm_module(fused_attention
  DESCRIPTION "Fused attention: FlashAttention-style tiles with an online softmax, no T x T matrix (model.attention)"
  KEYS model.attention
  NAMES flash FlashAttention "fused attention")
