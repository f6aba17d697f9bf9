// What modules add to the core at start-up (their register.cpp, from static initialisers): one
// list per type, made on first use so that the order in which files initialise does not matter.
// Lists are told apart by their entry type: two of one type (two std::function aliases of one
// signature among them) need a tag type each.
#pragma once

#include <utility>
#include <vector>

namespace zm {

template <typename T, typename Tag = T>
std::vector<T>& registry() {
  static std::vector<T> entries;
  return entries;
}

}  // namespace zm

// Defines `void add(Type)`, appending to Type's list, and `const std::vector<Type>& list()`, the
// entries in the order added.
#define ZM_REGISTRY(Type, add, list)                    \
  void add(Type entry) {                                \
    ::zm::registry<Type>().push_back(std::move(entry)); \
  }                                                     \
  const std::vector<Type>& list() {                     \
    return ::zm::registry<Type>();                      \
  }
