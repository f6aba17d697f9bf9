#include "modules/tensor_parallel/megatron.hpp"

#include <string>

#include "core/error.hpp"
#include "modules/tensor_parallel/vocab_parallel.hpp"

namespace zm {

ModelCollective megatron_collective(ModelSync point, int64_t rows, int64_t C, int64_t slices,
                                    int element_bytes) {
  if (point == ModelSync::HeadStatistics)
    return {CommOp::AllGather, kernels::kSliceStats * rows * slices, 4};
  return {CommOp::AllReduce, rows * C, element_bytes};
}

namespace {

bool ends_with(const std::string& name, const char* suffix) {
  const std::string s(suffix);
  return name.size() >= s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0;
}

// The cross-entropy's buffers (fp32): this rank's per-row statistics, every rank's gathered, and
// the whole rows' {max, sum}, of the rows of one chunk of the head.
int64_t size_slice_stats(const BufferShape& s) {
  return kernels::kSliceStats * s.Nc;
}
int64_t size_gathered_stats(const BufferShape& s) {
  return kernels::kSliceStats * s.Nc * s.slices;
}
int64_t size_row_stats(const BufferShape& s) {
  return 2 * s.Nc;
}
enum Stats { kSliceStatsBuffer, kGatheredStats, kRowStats };

class Megatron final : public ModelParallelScheme {
 public:
  TensorCut cut(const std::string& name) const override {
    if (name == "wte.weight") return {0, 1};  // vocabulary-parallel: rows
    // Column-parallel: the output rows (q, k and v each cut, so that heads stay whole).
    if (ends_with(name, "attn.c_attn.weight") || ends_with(name, "attn.c_attn.bias")) return {0, 3};
    if (ends_with(name, "mlp.c_fc.weight") || ends_with(name, "mlp.c_fc.bias")) return {0, 1};
    // Row-parallel: the weights' input columns.
    if (ends_with(name, "attn.c_proj.weight") || ends_with(name, "mlp.c_proj.weight"))
      return {1, 1};
    return {};  // LayerNorms, wpe, the row-parallel layers' biases: whole on every rank
  }

  std::vector<DeclaredBuffer> buffers() const override {
    constexpr MemCategory kWork = MemCategory::Workspace;
    return {{"ce_slice_stats", kWork, true, size_slice_stats},
            {"ce_gathered_stats", kWork, true, size_gathered_stats},
            {"ce_row_stats", kWork, true, size_row_stats}};
  }

  std::vector<ModelCollective> collectives(ModelSync point, const BufferShape& shape, int64_t rows,
                                           int element_bytes) const override {
    if (shape.slices == 1) return {};
    return {megatron_collective(point, rows, shape.C, shape.slices, element_bytes)};
  }

  bool adds_summed_bias(int rank) const override { return counts_held_alike(rank); }

  void select_token_groups(const ModelParallelGroup& group, int64_t vocab_rows,
                           const kernels::HostTokenGroups& all,
                           kernels::HostTokenGroups& out) const override {
    const int64_t begin = group.rank * vocab_rows, end = begin + vocab_rows;
    out.ids.clear();
    out.rows.clear();
    out.starts.assign(1, 0);
    for (size_t u = 0; u < all.ids.size(); ++u) {
      if (all.ids[u] < begin || all.ids[u] >= end) continue;
      out.ids.push_back(static_cast<int>(all.ids[u] - begin));
      for (int k = all.starts[u]; k < all.starts[u + 1]; ++k)
        out.rows.push_back(all.rows[static_cast<size_t>(k)]);
      out.starts.push_back(static_cast<int>(out.rows.size()));
    }
  }

  void sum(const ModelParallelCall<float>& call, ModelSync, float* data,
           int64_t count) const override {
    sum_of(call, data, count);
  }
  void embed(const ModelParallelCall<float>& call, float* out, const int* tokens, const float* wte,
             const float* wpe, int64_t vocab_rows, int64_t B, int64_t T, int64_t C) const override {
    embed_of(call, out, tokens, wte, wpe, vocab_rows, B, T, C);
  }
  void crossentropy(const ModelParallelCall<float>& call, float* logits,
                    kernels::Acc<float>* losses, const int* targets, int64_t rows, int64_t V,
                    int64_t vocab_rows, float dloss, bool fused) const override {
    crossentropy_of(call, logits, losses, targets, rows, V, vocab_rows, dloss, fused);
  }
  void crossentropy_backward(const ModelParallelCall<float>& call, float* probs, const int* targets,
                             float dloss, int64_t rows, int64_t V,
                             int64_t vocab_rows) const override {
    kernels::crossentropy_slice_backward(call.shape, probs, targets, call.group.rank * vocab_rows,
                                         dloss, rows, V, vocab_rows);
  }
#if ZEROMINI_HAVE_BF16
  void sum(const ModelParallelCall<bf16>& call, ModelSync, bf16* data,
           int64_t count) const override {
    sum_of(call, data, count);
  }
  void embed(const ModelParallelCall<bf16>& call, bf16* out, const int* tokens, const bf16* wte,
             const bf16* wpe, int64_t vocab_rows, int64_t B, int64_t T, int64_t C) const override {
    embed_of(call, out, tokens, wte, wpe, vocab_rows, B, T, C);
  }
  void crossentropy(const ModelParallelCall<bf16>& call, bf16* logits, kernels::Acc<bf16>* losses,
                    const int* targets, int64_t rows, int64_t V, int64_t vocab_rows, bf16 dloss,
                    bool fused) const override {
    crossentropy_of(call, logits, losses, targets, rows, V, vocab_rows, dloss, fused);
  }
  void crossentropy_backward(const ModelParallelCall<bf16>& call, bf16* probs, const int* targets,
                             bf16 dloss, int64_t rows, int64_t V,
                             int64_t vocab_rows) const override {
    kernels::crossentropy_slice_backward(call.shape, probs, targets, call.group.rank * vocab_rows,
                                         dloss, rows, V, vocab_rows);
  }
#endif

 private:
  // An all-reduce of `count` activations in place: rows of C (the point's declaration).
  template <typename Real>
  static void sum_of(const ModelParallelCall<Real>& call, Real* data, int64_t count) {
    post_model_collective(call.group, call.posts, call.unit, CommOp::AllReduce, data, data,
                          static_cast<size_t>(count), dtype_of<Real>());
  }

  // Each rank embeds the tokens of its rows (zeros elsewhere), the first adds the positions; the
  // model sums them over the group (ModelSync::Embedding).
  template <typename Real>
  static void embed_of(const ModelParallelCall<Real>& call, Real* out, const int* tokens,
                       const Real* wte, const Real* wpe, int64_t vocab_rows, int64_t B, int64_t T,
                       int64_t C) {
    const int rank = call.group.rank;
    kernels::encoder_forward_vocab_slice(call.shape, out, tokens, wte, rank * vocab_rows,
                                         vocab_rows, counts_held_alike(rank) ? wpe : nullptr, B, T,
                                         C);
  }

  // Each rank's {max, sum of exponentials, target logit} per row, gathered from every rank and
  // combined in rank order on every rank: the loss and the softmax of the whole row.
  template <typename Real>
  static void crossentropy_of(const ModelParallelCall<Real>& call, Real* logits,
                              kernels::Acc<Real>* losses, const int* targets, int64_t rows,
                              int64_t V, int64_t vocab_rows, Real dloss, bool fused) {
    namespace k = kernels;
    const auto& stats = call.workspace.arithmetic;
    const ModelParallelGroup& group = call.group;
    const int64_t begin = group.rank * vocab_rows;
    k::crossentropy_slice_stats(call.shape, logits, stats[kSliceStatsBuffer].data(), targets, begin,
                                rows, V, vocab_rows);
    post_model_collective(group, call.posts, call.unit, CommOp::AllGather,
                          stats[kSliceStatsBuffer].data(), stats[kGatheredStats].data(),
                          static_cast<size_t>(k::kSliceStats * rows), DType::F32);
    k::crossentropy_combine(call.shape, stats[kGatheredStats].data(), group.size, losses,
                            stats[kRowStats].data(), rows);
    if (fused)
      k::crossentropy_slice_dlogits(call.shape, logits, stats[kRowStats].data(), targets, begin,
                                    dloss, rows, V, vocab_rows);
    else
      k::softmax_slice(call.shape, logits, stats[kRowStats].data(), begin, rows, V, vocab_rows);
  }
};

}  // namespace

const ModelParallelScheme& megatron_scheme() {
  static const Megatron scheme;
  return scheme;
}

}  // namespace zm
