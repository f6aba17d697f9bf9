// The fuzzer (tests/fuzz/fuzz_inputs.cpp) links the core alone: this module registered before
// main(), so that data.source reads token shards, as in zeromini.
namespace zm {
void register_module_token_shards();
}  // namespace zm

namespace {
const bool registered = [] {
  zm::register_module_token_shards();
  return true;
}();
}  // namespace
