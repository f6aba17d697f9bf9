// The fuzzer (tests/fuzz/fuzz_inputs.cpp) links the core alone: this module registered before
// main(), so that the checkpoint loader it fuzzes checks each file whole first, as zeromini does.
namespace zm {
void register_module_checkpoint_seal();
}  // namespace zm

namespace {
const bool registered = [] {
  zm::register_module_checkpoint_seal();
  return true;
}();
}  // namespace
