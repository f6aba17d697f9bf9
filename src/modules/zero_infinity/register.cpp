// The module's registration (core/modules.hpp). So far the module holds the NVMe tier's swap
// files and I/O engines (swap_file.hpp, async_io.hpp), measured by zeromini-bench's NvmeIo and
// tested by tests/modules/zero_infinity; the deck keys and the memory tier that use them come
// next (README.md says what is there and what is not).
namespace zm {

void register_module_zero_infinity() {}

}  // namespace zm
