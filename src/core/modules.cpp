#include "core/modules.hpp"

#include <algorithm>

namespace zm {

namespace {
std::vector<ModuleInfo>& registry() {
  static std::vector<ModuleInfo> modules;
  return modules;
}
}  // namespace

void add_module(ModuleInfo module) {
  registry().push_back(std::move(module));
}

const std::vector<ModuleInfo>& modules() {
  return registry();
}

const ModuleInfo* module_of_key(const std::string& full_name) {
  for (const ModuleInfo& module : registry())
    if (std::find(module.keys.begin(), module.keys.end(), full_name) != module.keys.end())
      return &module;
  return nullptr;
}

std::string option_providing(const std::string& what) {
  for (const ModuleInfo& module : registry())
    if (std::find(module.provides.begin(), module.provides.end(), what) != module.provides.end())
      return module.option;
  return "";
}

std::string built_modules() {
  std::string names;
  for (const ModuleInfo& module : registry())
    if (module.built) names += (names.empty() ? "" : ", ") + module.name;
  return names.empty() ? "none" : names;
}

}  // namespace zm
