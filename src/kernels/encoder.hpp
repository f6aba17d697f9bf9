// Token + learned position embedding.
#pragma once

#include <cstdint>

#include "kernels/team_shape.hpp"
#include "kernels/token_groups.hpp"

namespace zm::kernels {

// out[b,t,:] = wte[tokens[b,t],:] + wpe[t,:]. out (B,T,C); tokens (B,T) int32, each in [0, V);
// wte (Vp,C); wpe (T_max >= T, C).
template <typename T>
void encoder_forward(TeamShape shape, T* out, const int* tokens, const T* wte, const T* wpe,
                     int64_t B, int64_t S, int64_t C);

// dwte[tokens[b,t],:] += dout[b,t,:]; dwpe[t,:] += sum_b dout[b,t,:], in a fixed order (a team
// per token of `groups`, the rows grouped by token, and per position).
template <typename T>
void encoder_backward(TeamShape shape, T* dwte, T* dwpe, const T* dout, const TokenGroups& groups,
                      int64_t B, int64_t S, int64_t C);

}  // namespace zm::kernels
