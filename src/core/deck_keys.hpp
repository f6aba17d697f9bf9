// What a module adds to the deck: its keys, in the schema beside the core's so that everything
// treats them as the core's own, and its checks of a whole deck. Their values live in
// Deck::module_values, read with Deck::value<T>("section.key") where the module maps its options.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/deck.hpp"
#include "core/deck_schema.hpp"

namespace zm {

using deck_detail::KeySpec;
using deck_detail::RawValue;

namespace deck_keys {
// One key of `module`. Bounds are inclusive unless said otherwise.
KeySpec choice(const std::string& module, std::string section, std::string key,
               std::string default_value, std::vector<std::string> choices, std::string doc);
KeySpec string(const std::string& module, std::string section, std::string key,
               std::string default_value, bool allow_empty, std::string doc);
KeySpec integer(const std::string& module, std::string section, std::string key,
                int64_t default_value, int64_t min, int64_t max, std::string doc);
KeySpec number(const std::string& module, std::string section, std::string key,
               double default_value, double min, bool min_exclusive, double max, bool max_exclusive,
               std::string doc);
KeySpec boolean(const std::string& module, std::string section, std::string key, bool default_value,
                std::string doc);
// A number of ranks or "node" (kShardSizeNode), like zero.shard_size; default 0; read as int64_t.
KeySpec shard_size(const std::string& module, std::string section, std::string key,
                   std::string doc);
// An integer or a string in a form of the key's own: `check` says what is wrong with a value
// ("" for nothing), `expects` describes what it takes; read as a string.
KeySpec custom(const std::string& module, std::string section, std::string key,
               std::string default_value, std::string expects,
               std::function<std::string(const RawValue&)> check, std::string doc);
}  // namespace deck_keys

// A module key's value as text (a string's without quotes), or `absent` where no module of this
// build registered the key: for a module reading another's settings where that may not be built.
std::string module_setting(const Deck& deck, const std::string& full_name,
                           const std::string& absent);

// Registers a module's keys (at start-up, from its registration function).
void add_deck_keys(const std::vector<KeySpec>& keys);

// A check of a whole deck once every key and --set was applied, e.g. a key against the model's
// shape; it fails (zm::Error) naming where the keys were set.
using DeckCheck = std::function<void(const Deck&, BuildChecks)>;
void add_deck_check(DeckCheck check);
// Runs every registered check (core/deck.cpp, after its own).
void run_deck_checks(const Deck& deck, BuildChecks build_checks);

}  // namespace zm
