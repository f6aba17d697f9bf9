#include "io/h5.hpp"

#include <algorithm>
#include <numeric>

#include "core/error.hpp"

namespace zm::h5 {

bool Handle::close() {
  if (id_ < 0) return true;
  // The last reference closes the object with its type's H5*close, which reports its error.
  const int status = H5Idec_ref(id_);
  id_ = H5I_INVALID_HID;
  return status >= 0;
}

namespace {

void quiet_errors() {
  static bool done = false;
  if (!done) H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  done = true;
}

herr_t innermost(unsigned n, const H5E_error2_t* e, void* out) {
  if (n == 0) *static_cast<std::string*>(out) = e->desc ? e->desc : "";
  return 0;
}

void write_attr_raw(hid_t object, const std::string& name, hid_t type, hid_t space,
                    const void* data) {
  if (H5Aexists(object, name.c_str()) > 0) H5Adelete(object, name.c_str());
  Handle attr(H5Acreate2(object, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT));
  if (!attr.valid() || H5Awrite(attr, type, data) < 0)
    fail("HDF5: cannot write attribute '{}': {}", name, last_error());
}

Handle string_type(size_t length) {
  Handle type(H5Tcopy(H5T_C_S1));
  H5Tset_size(type, length == 0 ? 1 : length);
  H5Tset_strpad(type, H5T_STR_NULLPAD);
  H5Tset_cset(type, H5T_CSET_UTF8);
  return type;
}

Handle open_attr(hid_t object, const std::string& name) {
  Handle attr(H5Aopen(object, name.c_str(), H5P_DEFAULT));
  if (!attr.valid()) fail("missing attribute '{}'", name);
  return attr;
}

template <typename T>
void write_scalar(hid_t object, const std::string& name, hid_t type, T value) {
  Handle space(H5Screate(H5S_SCALAR));
  write_attr_raw(object, name, type, space, &value);
}

template <typename T>
T read_scalar(hid_t object, const std::string& name, hid_t type) {
  Handle attr = open_attr(object, name);
  T value = 0;
  if (H5Aread(attr, type, &value) < 0) fail("cannot read attribute '{}'", name);
  return value;
}

template <typename T>
void write_whole(hid_t parent, const std::string& name, hid_t type, const std::vector<T>& values,
                 const std::vector<hsize_t>& shape, const Labels& labels) {
  Handle space(H5Screate_simple(static_cast<int>(shape.size()), shape.data(), nullptr));
  Handle set(H5Dcreate2(parent, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  if (!set.valid() ||
      (!values.empty() && H5Dwrite(set, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()) < 0))
    fail("HDF5: cannot write dataset '{}': {}", name, last_error());
  if (!labels.units.empty()) write_attr(set, "units", labels.units);
  if (!labels.columns.empty()) write_attr(set, "columns", labels.columns);
  if (!labels.dimensions.empty()) write_attr(set, "dimensions", labels.dimensions);
}

}  // namespace

std::string last_error() {
  std::string message;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, innermost, &message);
  return message.empty() ? "unknown HDF5 error" : message;
}

Handle create_file(const std::string& path, const MPI_Comm* comm, uint64_t user_block) {
  quiet_errors();
  Handle fapl(H5Pcreate(H5P_FILE_ACCESS));
  if (comm) H5Pset_fapl_mpio(fapl, *comm, MPI_INFO_NULL);
  Handle fcpl(H5Pcreate(H5P_FILE_CREATE));
  if (user_block > 0) H5Pset_userblock(fcpl, user_block);
  Handle file(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, fcpl, fapl));
  if (!file.valid()) fail("{}: cannot create the HDF5 file: {}", path, last_error());
  return file;
}

Handle open_file(const std::string& path) {
  quiet_errors();
  Handle file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
  if (!file.valid())
    fail("{}: cannot open as HDF5 (missing, truncated or not an HDF5 file): {}", path,
         last_error());
  return file;
}

Handle create_group(hid_t parent, const std::string& name) {
  Handle g(H5Gcreate2(parent, name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  if (!g.valid()) fail("HDF5: cannot create group '{}': {}", name, last_error());
  return g;
}

Handle open_group(hid_t parent, const std::string& name) {
  Handle g(H5Gopen2(parent, name.c_str(), H5P_DEFAULT));
  if (!g.valid()) fail("HDF5: no group '{}'", name);
  return g;
}

bool exists(hid_t parent, const std::string& path) {
  // Checks each component, as H5Lexists requires.
  size_t at = 0;
  while (true) {
    const size_t slash = path.find('/', at);
    const std::string prefix = path.substr(0, slash);
    if (H5Lexists(parent, prefix.c_str(), H5P_DEFAULT) <= 0) return false;
    if (slash == std::string::npos) return true;
    at = slash + 1;
  }
}

void write_attr(hid_t object, const std::string& name, const std::string& value) {
  Handle type = string_type(value.size());
  Handle space(H5Screate(H5S_SCALAR));
  write_attr_raw(object, name, type, space, value.empty() ? "" : value.data());
}

void write_attr(hid_t object, const std::string& name, int64_t value) {
  write_scalar(object, name, H5T_NATIVE_INT64, value);
}

void write_attr(hid_t object, const std::string& name, double value) {
  write_scalar(object, name, H5T_NATIVE_DOUBLE, value);
}

void write_attr(hid_t object, const std::string& name, const std::vector<std::string>& values) {
  size_t longest = 1;
  for (const auto& v : values) longest = std::max(longest, v.size());
  std::string packed(longest * values.size(), '\0');
  for (size_t i = 0; i < values.size(); ++i)
    packed.replace(i * longest, values[i].size(), values[i]);
  Handle type = string_type(longest);
  const hsize_t n = values.size();
  Handle space(H5Screate_simple(1, &n, nullptr));
  write_attr_raw(object, name, type, space, packed.data());
}

std::string read_attr_string(hid_t object, const std::string& name) {
  Handle attr = open_attr(object, name);
  Handle type(H5Aget_type(attr));
  if (H5Tget_class(type) != H5T_STRING) fail("attribute '{}' is not a string", name);
  if (H5Tis_variable_str(type) > 0) {
    char* text = nullptr;
    Handle mem = Handle(H5Tcopy(H5T_C_S1));
    H5Tset_size(mem, H5T_VARIABLE);
    if (H5Aread(attr, mem, &text) < 0) fail("cannot read attribute '{}'", name);
    std::string out = text ? text : "";
    H5free_memory(text);
    return out;
  }
  const size_t size = H5Tget_size(type);
  std::string out(size, '\0');
  if (H5Aread(attr, type, out.data()) < 0) fail("cannot read attribute '{}'", name);
  out.resize(strnlen(out.data(), size));
  return out;
}

int64_t read_attr_int(hid_t object, const std::string& name) {
  return read_scalar<int64_t>(object, name, H5T_NATIVE_INT64);
}

double read_attr_double(hid_t object, const std::string& name) {
  return read_scalar<double>(object, name, H5T_NATIVE_DOUBLE);
}

bool has_attr(hid_t object, const std::string& name) {
  return H5Aexists(object, name.c_str()) > 0;
}

void write_dataset(hid_t parent, const std::string& name, const std::vector<double>& values,
                   const std::vector<hsize_t>& shape, const Labels& labels) {
  write_whole(parent, name, H5T_NATIVE_DOUBLE, values, shape, labels);
}

void write_dataset(hid_t parent, const std::string& name, const std::vector<int64_t>& values,
                   const std::vector<hsize_t>& shape, const Labels& labels) {
  write_whole(parent, name, H5T_NATIVE_INT64, values, shape, labels);
}

std::vector<double> read_doubles(hid_t group, const std::string& name, std::vector<hsize_t>& dims) {
  Handle set(H5Dopen2(group, name.c_str(), H5P_DEFAULT));
  if (!set.valid()) fail("missing dataset {}", name);
  Handle space(H5Dget_space(set));
  const int rank = H5Sget_simple_extent_ndims(space);
  dims.assign(static_cast<size_t>(std::max(rank, 0)), 0);
  H5Sget_simple_extent_dims(space, dims.data(), nullptr);
  const hsize_t n = std::accumulate(dims.begin(), dims.end(), hsize_t(1), std::multiplies<>());
  std::vector<double> values(n);
  if (n > 0 && H5Dread(set, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()) < 0)
    fail("cannot read dataset {}: {}", name, last_error());
  return values;
}

std::vector<std::string> read_attr_strings(hid_t object, const std::string& name) {
  Handle attr = open_attr(object, name);
  Handle type(H5Aget_type(attr));
  Handle space(H5Aget_space(attr));
  if (H5Tget_class(type) != H5T_STRING || H5Tis_variable_str(type) > 0)
    fail("attribute '{}' is not an array of fixed-length strings", name);
  hsize_t count = 1;
  if (H5Sget_simple_extent_ndims(space) == 1) H5Sget_simple_extent_dims(space, &count, nullptr);
  const size_t width = H5Tget_size(type);
  std::string packed(width * count, '\0');
  if (count > 0 && H5Aread(attr, type, packed.data()) < 0) fail("cannot read attribute '{}'", name);
  std::vector<std::string> values;
  for (hsize_t i = 0; i < count; ++i) {
    const char* item = packed.data() + i * width;
    values.emplace_back(item, strnlen(item, width));
  }
  return values;
}

}  // namespace zm::h5
