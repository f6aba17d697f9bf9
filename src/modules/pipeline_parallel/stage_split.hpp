// How the model's blocks are split into the pipeline's stages: consecutive runs of blocks, of the
// lengths parallel.pp_layers gives (an uneven split, e.g. a lighter last stage for the head), or
// model.layers / parallel.pp each.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/deck.hpp"
#include "core/deck_schema.hpp"

namespace zm::pipeline {

inline const char* const kLayersKey = "parallel.pp_layers";

// The deck key's check of a value: "" or what is wrong with it (a string of positive block
// counts, comma separated, such as "5,7"; an integer is one stage's).
std::string check_block_list(const deck_detail::RawValue& value);

// The blocks of each of the `pp` stages of `deck`'s model, in order: parallel.pp_layers where it
// is given (for a model k times as deep as its sum, k times each count: the depths `zeromini plan
// --largest` tries), equal stages otherwise. Fails naming where the keys were set when they
// disagree (a list not of pp entries, or whose sum model.layers is not a multiple of; pp not
// dividing model.layers).
std::vector<int64_t> stage_blocks(const Deck& deck, int64_t pp);
// The sum of parallel.pp_layers (0: equal stages).
int64_t split_depth(const Deck& deck);

}  // namespace zm::pipeline
