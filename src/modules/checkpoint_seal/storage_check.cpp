// validate_storage (file_integrity.hpp): the datasets as io/checkpoint.cpp writes them.
#include <string>

#include "core/error.hpp"
#include "io/checkpoint.hpp"
#include "io/h5.hpp"
#include "modules/checkpoint_seal/file_integrity.hpp"

namespace zm {

void validate_storage(hid_t set, const std::string& path, const std::string& name) {
  auto refuse = [&](const std::string& why) {
    fail(
        "{}: dataset {} is not stored as zeromini writes it ({}); the file is damaged or not a "
        "zeromini checkpoint",
        path, name, why);
  };
  h5::Handle type(H5Dget_type(set));
  if (!type.valid() || H5Tequal(type, H5T_IEEE_F32LE) <= 0) refuse("not little-endian fp32");
  h5::Handle dcpl(H5Dget_create_plist(set));
  if (!dcpl.valid() || H5Pget_layout(dcpl) != H5D_CHUNKED) refuse("not chunked");
  hsize_t chunk = 0;
  if (H5Pget_chunk(dcpl, 1, &chunk) != 1 || chunk == 0 || chunk > kCheckpointMaxChunkElements)
    refuse("unexpected chunk shape");
  unsigned flags = 0;
  size_t values = 0;
  if (H5Pget_nfilters(dcpl) != 1 || H5Pget_filter2(dcpl, 0, &flags, &values, nullptr, 0, nullptr,
                                                   nullptr) != H5Z_FILTER_FLETCHER32)
    refuse("no Fletcher32 checksum");
  h5::Handle space(H5Dget_space(set));
  hsize_t chunks = 0;
  if (H5Dget_num_chunks(set, space, &chunks) < 0) refuse("unreadable chunk index");
  hsize_t size = 0;
  H5Sget_simple_extent_dims(space, &size, nullptr);
  if (chunks != (size + chunk - 1) / chunk) refuse("missing chunks");
  for (hsize_t i = 0; i < chunks; ++i) {
    hsize_t offset = 0, stored = 0;
    unsigned mask = 0;
    haddr_t address = HADDR_UNDEF;
    if (H5Dget_chunk_info(set, space, i, &offset, &mask, &address, &stored) < 0 ||
        address == HADDR_UNDEF || stored != chunk * sizeof(float) + 4 || mask != 0)
      refuse("chunk " + std::to_string(i) + " has the wrong size or filters");
  }
}

}  // namespace zm
