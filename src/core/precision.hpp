// The arithmetic a run computes in, parsed once from train.precision; every layer asks it, not
// the deck's text, for names and element sizes.
#pragma once

#include <string>

namespace zm {

enum class Precision {
  FP32,  // fp32 everywhere
  TF32,  // fp32 storage, GEMMs on TF32 tensor cores (CUDA)
  BF16,  // mixed: bf16 parameters, activations, gradients and collectives; fp32 master and Adam
};

// "fp32", "tf32", "bf16": the deck's spelling.
const char* precision_name(Precision precision);
// The deck's spelling back to the enum; false when `text` names none.
bool parse_precision(const std::string& text, Precision& precision);

// Bytes of one element of parameters, activations and gradients in the compute type.
inline int compute_element_bytes(Precision precision) {
  return precision == Precision::BF16 ? 2 : 4;
}
inline bool is_mixed(Precision precision) {
  return precision == Precision::BF16;
}

}  // namespace zm
