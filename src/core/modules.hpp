// The modules of this build: the optional features that live beside the core, each in its folder
// src/modules/<name>/ (ARCHITECTURE.md, "Modules"). CMake writes register_modules()
// (cmake/ZeroMiniModules.cmake): it records every module, built or not, and calls the
// registration function of each one built, which adds what the module brings through the
// interfaces the core defines (deck keys, validation, the run's options, step hooks, results).
// Called once, first thing, by every program (zeromini, zeromini-bench, the tests).
//
// A module that is not built still has its record: a deck that sets one of its keys is refused
// before the run (exit status 2), naming the key, where it was set and the CMake option that would
// build the module.
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
