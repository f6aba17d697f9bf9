// A thin C++ layer over the HDF5 C API: owning handles, and the attribute and dataset calls
// zeromini uses. Errors become zm::Error with the file and object named; HDF5's own error stack
// printing is switched off so messages come out once, in zeromini's words.
#pragma once

#include <hdf5.h>
#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

namespace zm::h5 {

// Owns an hid_t and closes it (drops HDF5's reference).
class Handle {
 public:
  Handle() = default;
  explicit Handle(hid_t id) : id_(id) {}
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  Handle(Handle&& o) noexcept : id_(o.id_) { o.id_ = H5I_INVALID_HID; }
  Handle& operator=(Handle&& o) noexcept {
    if (this != &o) {
      close();
      id_ = o.id_;
      o.id_ = H5I_INVALID_HID;
    }
    return *this;
  }
  ~Handle() { close(); }
  operator hid_t() const { return id_; }
  bool valid() const { return id_ >= 0; }
  // Closes now; false when HDF5 reported an error (a file whose last writes failed).
  bool close();

 private:
  hid_t id_ = H5I_INVALID_HID;
};

// Files. `comm` non-null: parallel (MPI-IO) access, collective over that communicator.
// user_block: bytes reserved at the start of the file for the application (0: none). Files are
// opened read-only, by one process.
Handle create_file(const std::string& path, const MPI_Comm* comm = nullptr,
                   uint64_t user_block = 0);
Handle open_file(const std::string& path);

Handle create_group(hid_t parent, const std::string& name);
Handle open_group(hid_t parent, const std::string& name);
bool exists(hid_t parent, const std::string& path);

// Attributes on a file, group or dataset.
void write_attr(hid_t object, const std::string& name, const std::string& value);
void write_attr(hid_t object, const std::string& name, int64_t value);
void write_attr(hid_t object, const std::string& name, double value);
void write_attr(hid_t object, const std::string& name, const std::vector<std::string>& values);
std::string read_attr_string(hid_t object, const std::string& name);
int64_t read_attr_int(hid_t object, const std::string& name);
double read_attr_double(hid_t object, const std::string& name);
bool has_attr(hid_t object, const std::string& name);

// Whole small datasets written by one process (results files), with the attributes that say
// what they hold: `units`, `columns` and `dimensions`, each written only when given.
struct Labels {
  std::string units;
  std::vector<std::string> columns, dimensions;
};
void write_dataset(hid_t parent, const std::string& name, const std::vector<double>& values,
                   const std::vector<hsize_t>& shape, const Labels& labels = {});
void write_dataset(hid_t parent, const std::string& name, const std::vector<int64_t>& values,
                   const std::vector<hsize_t>& shape, const Labels& labels = {});

// Whole datasets and string-array attributes read back (as doubles whatever their stored type);
// `dims` receives the dataset's shape.
std::vector<double> read_doubles(hid_t group, const std::string& name, std::vector<hsize_t>& dims);
std::vector<std::string> read_attr_strings(hid_t object, const std::string& name);

// Describes the error HDF5 just reported (innermost message), for zeromini's own messages.
std::string last_error();

}  // namespace zm::h5
