#include "core/deck_keys.hpp"

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/registry.hpp"

namespace zm {

using deck_detail::Kind;
using deck_detail::RawValue;

namespace deck_keys {

namespace {

KeySpec module_key(const std::string& module, std::string section, std::string key, Kind kind,
                   ModuleValue default_value, std::string doc) {
  KeySpec s = deck_detail::key_spec(std::move(section), std::move(key), kind, std::move(doc));
  s.module = module;
  s.module_default = std::move(default_value);
  const std::string full = s.full_name();
  s.set = [full, kind](Deck& d, const RawValue& v) {
    d.module_values[full] = deck_detail::typed_value(kind, v);
  };
  s.get = [full, kind, unset = s.module_default](const Deck& d) {
    const auto set = d.module_values.find(full);
    return deck_detail::toml_text(kind, set != d.module_values.end() ? set->second : unset);
  };
  return s;
}

}  // namespace

KeySpec choice(const std::string& module, std::string section, std::string key,
               std::string default_value, std::vector<std::string> choices, std::string doc) {
  KeySpec s = module_key(module, std::move(section), std::move(key), Kind::Choice,
                         std::move(default_value), std::move(doc));
  s.choices = std::move(choices);
  return s;
}

KeySpec string(const std::string& module, std::string section, std::string key,
               std::string default_value, bool allow_empty, std::string doc) {
  KeySpec s = module_key(module, std::move(section), std::move(key), Kind::String,
                         std::move(default_value), std::move(doc));
  s.allow_empty = allow_empty;
  return s;
}

KeySpec integer(const std::string& module, std::string section, std::string key,
                int64_t default_value, int64_t min, int64_t max, std::string doc) {
  return deck_detail::bounded(module_key(module, std::move(section), std::move(key), Kind::Integer,
                                         default_value, std::move(doc)),
                              static_cast<double>(min), false, static_cast<double>(max), false);
}

KeySpec number(const std::string& module, std::string section, std::string key,
               double default_value, double min, bool min_exclusive, double max, bool max_exclusive,
               std::string doc) {
  return deck_detail::bounded(module_key(module, std::move(section), std::move(key), Kind::Float,
                                         default_value, std::move(doc)),
                              min, min_exclusive, max, max_exclusive);
}

KeySpec boolean(const std::string& module, std::string section, std::string key, bool default_value,
                std::string doc) {
  return module_key(module, std::move(section), std::move(key), Kind::Boolean, default_value,
                    std::move(doc));
}

KeySpec shard_size(const std::string& module, std::string section, std::string key,
                   std::string doc) {
  return module_key(module, std::move(section), std::move(key), Kind::ShardSize, int64_t{0},
                    std::move(doc));
}

KeySpec custom(const std::string& module, std::string section, std::string key,
               std::string default_value, std::string expects,
               std::function<std::string(const RawValue&)> check, std::string doc) {
  KeySpec s = module_key(module, std::move(section), std::move(key), Kind::Custom,
                         std::move(default_value), std::move(doc));
  s.expects = std::move(expects);
  s.check = std::move(check);
  return s;
}

}  // namespace deck_keys

std::string module_setting(const Deck& deck, const std::string& full_name,
                           const std::string& absent) {
  for (const KeySpec& spec : deck_detail::schema()) {
    if (spec.full_name() != full_name || spec.module.empty()) continue;
    if (std::holds_alternative<std::string>(spec.module_default))
      return deck.value<std::string>(full_name);
    return spec.get(deck);
  }
  return absent;
}

void add_deck_keys(const std::vector<KeySpec>& keys) {
  deck_detail::add_keys(keys);
}

ZM_REGISTRY(DeckCheck, add_deck_check, deck_checks)

void run_deck_checks(const Deck& deck, BuildChecks build_checks) {
  for (const DeckCheck& check : deck_checks()) check(deck, build_checks);
}

template <typename T>
T Deck::value(const std::string& full_name) const {
  auto found = module_values.find(full_name);
  if (found != module_values.end()) {
    const T* typed = std::get_if<T>(&found->second);
    ZM_ASSERT(typed != nullptr, "module key {} read as another type than it holds", full_name);
    return *typed;
  }
  for (const KeySpec& spec : deck_detail::schema()) {
    if (spec.full_name() != full_name) continue;
    const T* typed = std::get_if<T>(&spec.module_default);
    ZM_ASSERT(!spec.module.empty() && typed != nullptr, "{} is not a module key of that type",
              full_name);
    return *typed;
  }
  ZM_ASSERT(false, "module key {} is not registered (is its module built and registered?)",
            full_name);
  return T{};
}

template int64_t Deck::value<int64_t>(const std::string&) const;
template double Deck::value<double>(const std::string&) const;
template bool Deck::value<bool>(const std::string&) const;
template std::string Deck::value<std::string>(const std::string&) const;

void Deck::set_value(const std::string& full_name, ModuleValue value) {
  module_values[full_name] = std::move(value);
}

}  // namespace zm
