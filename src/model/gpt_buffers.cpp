// The model's activations and workspace, declared once: the tables below name each buffer, its
// category, element type, element count and the member it is allocated into (the attention
// kernels' and the model-parallel scheme's buffers: those they declare). gpt_buffers prices them
// for the planner and GPT's constructor allocates them, walking the same rows.
#include <fmt/format.h>

#include <algorithm>

#include "kernels/column_sums.hpp"
#include "model/gpt.hpp"

namespace zm {

namespace {

// Element counts, as functions of the shape. Cl: this rank's heads' channels; Fl: its part of the
// MLP's 4C; NcVl: the logits of its vocabulary rows for the rows of one chunk of the LM head (all
// N rows at model.classifier_chunk = 0); partials: per-block partial sums of the bias (up to the
// MLP's width on this rank) and LayerNorm (2 x C) gradients.
struct Size {
  static int64_t N(const BufferShape& s) { return s.N; }
  static int64_t N1(const BufferShape& s) { return s.N + 1; }
  static int64_t NC(const BufferShape& s) { return s.N * s.C; }
  static int64_t NCl(const BufferShape& s) { return s.N * s.Cl; }
  static int64_t N3Cl(const BufferShape& s) { return s.N * 3 * s.Cl; }
  static int64_t NFl(const BufferShape& s) { return s.N * s.Fl; }
  static int64_t NcVl(const BufferShape& s) { return s.Nc * s.Vl; }
  static int64_t Nh(const BufferShape& s) { return s.Nh; }
  static int64_t NhC(const BufferShape& s) { return s.Nh * s.C; }
  static int64_t partials(const BufferShape& s) {
    return kernels::column_partials_size(s.N, std::max(s.Fl, 2 * s.C));
  }
};

constexpr MemCategory kAct = MemCategory::Activations, kWork = MemCategory::Workspace;

}  // namespace

// One block's saved activations: the Real ones, then the LayerNorm statistics, kept in the
// arithmetic type (fp32 also under bf16).
template <typename Real>
auto GPT<Real>::layer_buffers() -> const std::vector<LayerBuffer>& {
  using E = LayerBuffer;
  static const std::vector<E> table = {
      E::real("ln1", kAct, Size::NC, &LayerActs::ln1),
      // What the attention kernels save, e.g. q, k, v.
      E::declared(Declarer::Attention, kAct, &LayerActs::attention),
      E::real("atty", kAct, Size::NCl, &LayerActs::atty),
      E::real("ln2", kAct, Size::NC, &LayerActs::ln2),
      E::real("fch", kAct, Size::NFl, &LayerActs::fch),
      E::real("fch_gelu", kAct, Size::NFl, &LayerActs::fch_gelu),
      E::real("residual2", kAct, Size::NC, &LayerActs::residual2),
      E::real("residual3", kAct, Size::NC, &LayerActs::residual3),
      E::stat("ln1_mean", kAct, Size::N, &LayerActs::ln1_mean),
      E::stat("ln1_rstd", kAct, Size::N, &LayerActs::ln1_rstd),
      E::stat("ln2_mean", kAct, Size::N, &LayerActs::ln2_mean),
      E::stat("ln2_rstd", kAct, Size::N, &LayerActs::ln2_rstd),
  };
  return table;
}

template <typename Real>
auto GPT<Real>::model_buffers() -> const std::vector<ModelBuffer>& {
  using E = ModelBuffer;
  static const std::vector<E> table = {
      E::real("encoded", kAct, Size::NC, &GPT::encoded_),
      E::blocks("layer", &GPT::layers_),  // layer0.ln1, ..., layer{L-1}.ln2_rstd
      // model.recompute = "blocks": the activations of the block being recomputed.
      E::blocks("recompute", &GPT::recompute_),
      // The head's (none in a part of the model without it).
      E::real("lnf", kAct, Size::NhC, &GPT::lnf_),
      // LayerNorm statistics in the arithmetic type, as in the blocks.
      E::stat("lnf_mean", kAct, Size::Nh, &GPT::lnf_mean_),
      E::stat("lnf_rstd", kAct, Size::Nh, &GPT::lnf_rstd_),
      E::real("logits", kAct, Size::NcVl, &GPT::logits_),
      // Per-token losses in the arithmetic type (fp32 under bf16), as the step's loss is kept.
      E::stat("losses", kAct, Size::Nh, &GPT::losses_),
      E::token("inputs", kAct, Size::N, &GPT::inputs_),    // int32 tokens
      E::token("targets", kAct, Size::N, &GPT::targets_),  // int32 tokens
      // The inputs' rows grouped by token, for the token-embedding gradient (int32).
      E::token("token_ids", kAct, Size::N, &GPT::token_ids_),
      E::token("token_starts", kAct, Size::N1, &GPT::token_starts_),
      E::token("token_rows", kAct, Size::N, &GPT::token_rows_),
      // Workspace reused across layers.
      E::real("qkv", kWork, Size::N3Cl, &GPT::qkv_),
      E::real("scratch_btc", kWork, Size::NC, &GPT::scratch_btc_),
      E::real("dresidual", kWork, Size::NC, &GPT::dresidual_),
      E::real("dbtc", kWork, Size::NC, &GPT::dbtc_),
      E::real("datty", kWork, Size::NCl, &GPT::datty_),
      E::real("dqkv", kWork, Size::N3Cl, &GPT::dqkv_),
      E::real("dfch", kWork, Size::NFl, &GPT::dfch_),
      E::real("dfch_gelu", kWork, Size::NFl, &GPT::dfch_gelu_),
      // The attention kernels' scratch.
      E::declared(Declarer::Attention, kWork, &GPT::attention_workspace_),
      // The bias and LayerNorm gradients' partial sums, in the arithmetic type.
      E::stat("column_partials", kWork, Size::partials, &GPT::column_partials_),
      // The model-parallel scheme's (none without one).
      E::declared(Declarer::ModelParallel, kWork, &GPT::split_workspace_),
  };
  return table;
}

template <typename Real>
std::string GPT<Real>::block_prefix(const ModelBuffer& blocks, int64_t set) {
  return fmt::format("{}{}.", blocks.name, set);
}

template <typename Real>
std::vector<DeclaredBuffer> GPT<Real>::declared_by(Declarer who, const AttentionKernels& attention,
                                                   const ModelParallelScheme* scheme,
                                                   MemCategory category) {
  std::vector<DeclaredBuffer> out;
  if (who == Declarer::Attention)
    out = attention.buffers();
  else if (scheme != nullptr)
    out = scheme->buffers();
  out.erase(std::remove_if(out.begin(), out.end(),
                           [&](const DeclaredBuffer& b) { return b.category != category; }),
            out.end());
  return out;
}

BufferShape buffer_shape(const ParamLayout& layout, int64_t B, int64_t T) {
  const ModelConfig& c = layout.config();
  const BlockWidths& w = layout.widths();
  const int64_t N = B * T, Vl = layout.vocab_rows();
  const int64_t Nh = layout.heads() ? N : 0, Nc = layout.heads() ? c.classifier_rows(N) : 0;
  return {B,           T,     N,  c.dim, c.heads, c.padded_vocab(), layout.slices(), w.heads,
          w.attention, w.mlp, Vl, Nc,    Nh};
}

// The rows of GPT<float>'s tables, priced by element type: the tables are the same for every Real.
std::vector<BufferSpec> gpt_buffers(const ParamLayout& layout, const AttentionKernels& attention,
                                    int64_t B, int64_t T, int element_bytes,
                                    MemCategory checkpoints, bool shares_scratch) {
  using Model = GPT<float>;
  const ModelConfig& c = layout.config();
  const BufferShape shape = buffer_shape(layout, B, T);
  std::vector<BufferSpec> plan;
  // A row of either table; a declared row stands for the buffers of its category.
  const auto add = [&](const auto& row, const std::string& prefix) {
    if (row.declared_member == nullptr) {
      plan.push_back(
          {prefix + row.name, row.category, row.count(shape), row.element_bytes(element_bytes)});
      return;
    }
    for (const DeclaredBuffer& b :
         Model::declared_by(row.declarer, attention, layout.scheme(), row.category))
      plan.push_back({prefix + b.name, b.category, b.count(shape),
                      b.arithmetic ? 4 : element_bytes});  // Stat: fp32 whatever Real is
  };
  for (const Model::ModelBuffer& m : Model::model_buffers()) {
    if (shares_scratch && Model::scratch(m, layout)) continue;
    if (m.blocks_member == nullptr) {
      add(m, "");
      continue;
    }
    Model::for_each_block_buffer(m, layout, [&](int64_t set, const Model::LayerBuffer& b) {
      add(b, Model::block_prefix(m, set));
      // Under recompute a layer holds its output only; a home keeps all but the last two's.
      if (m.blocks_member == &Model::layers_ && c.recomputes_blocks() && set < layout.blocks() - 2)
        plan.back().category = checkpoints;
    });
  }
  return plan;
}

#define ZM_INSTANTIATE(R)                                                   \
  template const std::vector<GPT<R>::LayerBuffer>& GPT<R>::layer_buffers(); \
  template const std::vector<GPT<R>::ModelBuffer>& GPT<R>::model_buffers(); \
  template std::string GPT<R>::block_prefix(const ModelBuffer&, int64_t);   \
  template std::vector<DeclaredBuffer> GPT<R>::declared_by(                 \
      Declarer, const AttentionKernels&, const ModelParallelScheme*, MemCategory);
ZM_FOR_EACH_REAL(ZM_INSTANTIATE)
#undef ZM_INSTANTIATE

}  // namespace zm
