// The arithmetic a run computes in. The deck's train.precision is a shorthand; with
// train.reduce_precision it fills one PrecisionPolicy, and every layer asks the policy, not the
// deck's text, for element types, sizes and GEMM math.
#pragma once

#include <string>

namespace zm {

// train.precision, the shorthand.
enum class Precision {
  FP32,  // fp32 everywhere
  TF32,  // fp32 storage, GEMMs on TF32 tensor cores (CUDA)
  BF16,  // mixed: bf16 parameters, activations, gradients and collectives; fp32 master and Adam
};

// train.reduce_precision: the type gradients are summed across ranks in.
enum class ReducePrecision {
  Compute,  // the compute type (bf16 under train.precision = "bf16")
  FP32,     // fp32 whatever the compute type (FSDP's MixedPrecision(reduce_dtype=float32))
};

// The element types the policy chooses between.
enum class Element { FP32, BF16 };
inline int element_bytes(Element element) {
  return element == Element::BF16 ? 2 : 4;
}

// Arithmetic of the float GEMMs: full fp32, or TF32 tensor cores (cuBLAS only). bf16 GEMMs
// always accumulate in fp32.
enum class GemmMath { FP32, TF32 };

// What each kind of data is stored or summed in (ARCHITECTURE.md, "Precision").
struct PrecisionPolicy {
  Element param = Element::FP32;    // the parameters the model reads, and their gathers
  Element compute = Element::FP32;  // activations, gradients as backward writes them, kernels
  Element reduce = Element::FP32;   // the cross-rank gradient sums, and the gradients AdamW reads
  Element master = Element::FP32;   // the weights AdamW updates (a copy when param differs)
  GemmMath gemm_math = GemmMath::FP32;

  // Mixed precision: the parameters are a rounded copy of separate fp32 masters.
  bool mixed() const { return param != master; }
  // The gradient sums run in a wider type than backward writes (an fp32 buffer beside them).
  bool widens_reduce() const { return reduce != compute; }
};

// The policy the shorthand and the reduce key describe.
PrecisionPolicy make_precision_policy(Precision shorthand, ReducePrecision reduce);

// "fp32", "tf32", "bf16": the deck's spelling.
const char* precision_name(Precision precision);
// The deck's spelling back to the enum; false when `text` names none.
bool parse_precision(const std::string& text, Precision& precision);
// "compute", "fp32": the deck's spelling of train.reduce_precision.
const char* reduce_precision_name(ReducePrecision reduce);
bool parse_reduce_precision(const std::string& text, ReducePrecision& reduce);

inline bool is_mixed(Precision precision) {
  return precision == Precision::BF16;
}

}  // namespace zm
