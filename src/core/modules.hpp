// The modules of this build: the optional features beside the core, each in src/modules/<name>/
// (ARCHITECTURE.md, "Modules"). register_modules(), written by CMake
// (cmake/ZeroMiniModules.cmake) and called first thing by every program, records every module,
// built or not, and calls each built one's registration function, which adds what it brings
// through the core's interfaces. A deck that sets a key of a module not built is refused (exit
// status 2), naming the CMake option that would build it.
#pragma once

#include <string>
#include <vector>

namespace zm {

struct ModuleInfo {
  std::string name;                   // the folder's name
  std::string option;                 // its CMake option, e.g. "ZEROMINI_WITH_OFFLOAD"
  std::string description;            // one line
  std::vector<std::string> keys;      // the deck keys it owns ("section.key")
  bool built = false;                 // part of this build
  std::vector<std::string> provides;  // what the core asks a module for, e.g. "device staging"
};

// Defined in the generated modules_generated.cpp (the zeromini_modules library).
void register_modules();

void add_module(ModuleInfo module);
const std::vector<ModuleInfo>& modules();
// The module owning deck key `full_name`, or nullptr (a core key, or no such key).
const ModuleInfo* module_of_key(const std::string& full_name);
// The CMake option of the module that provides `what` (ModuleInfo::provides), for a message that
// asks for it; empty where no module does.
std::string option_providing(const std::string& what);
// "a, b" (or "none"): the modules this build has, for --version and the run's records.
std::string built_modules();

}  // namespace zm
