#include "core/modules.hpp"

#include <algorithm>

#include "core/registry.hpp"

namespace zm {

ZM_REGISTRY(ModuleInfo, add_module, modules)

const ModuleInfo* module_of_key(const std::string& full_name) {
  for (const ModuleInfo& module : modules())
    if (std::find(module.keys.begin(), module.keys.end(), full_name) != module.keys.end())
      return &module;
  return nullptr;
}

std::string option_providing(const std::string& what) {
  for (const ModuleInfo& module : modules())
    if (std::find(module.provides.begin(), module.provides.end(), what) != module.provides.end())
      return module.option;
  return "";
}

std::string built_modules() {
  std::string names;
  for (const ModuleInfo& module : modules())
    if (module.built) names += (names.empty() ? "" : ", ") + module.name;
  return names.empty() ? "none" : names;
}

}  // namespace zm
