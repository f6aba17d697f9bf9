// Device buffers for kernel tests, filled from and read back to host vectors.
#pragma once

#include <random>
#include <vector>

#include "core/compat.hpp"
#include "kernels/column_sums.hpp"
#include "kernels/token_groups.hpp"

namespace zm::testing {

template <typename T>
class DeviceVec {
 public:
  explicit DeviceVec(size_t n) : view_("test_buffer", n) {}
  explicit DeviceVec(const std::vector<T>& host) : view_("test_buffer", host.size()) { set(host); }
  void set(const std::vector<T>& host) {
    Kokkos::deep_copy(view_,
                      Kokkos::View<const T*, HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
                          host.data(), host.size()));
  }
  std::vector<T> get() const {
    std::vector<T> host(view_.extent(0));
    Kokkos::deep_copy(Kokkos::View<T*, HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
                          host.data(), host.size()),
                      view_);
    return host;
  }
  T* data() const { return view_.data(); }
  size_t size() const { return view_.extent(0); }

 private:
  Kokkos::View<T*, MemSpace> view_;
};

template <typename T>
std::vector<T> random_vector(size_t n, unsigned seed, double scale = 1.0) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0.0, scale);
  std::vector<T> v(n);
  for (auto& x : v) x = static_cast<T>(normal(rng));
  return v;
}

// Scratch for the column sums of the kernels that take `partials`.
template <typename A>
DeviceVec<A> column_partials(int64_t rows, int64_t columns, int sums = 1) {
  return DeviceVec<A>(static_cast<size_t>(kernels::column_partials_size(rows, columns, sums)));
}

// Host tokens grouped by token (what the model uploads with every micro-batch), on the device.
struct DeviceTokenGroups {
  DeviceTokenGroups(const std::vector<int>& tokens, int64_t vocab) {
    kernels::HostTokenGroups host;
    host.build(tokens.data(), static_cast<int64_t>(tokens.size()), vocab);
    ids.emplace_back(host.ids);
    starts.emplace_back(host.starts);
    rows.emplace_back(host.rows);
    groups = {ids[0].data(), starts[0].data(), rows[0].data(),
              static_cast<int64_t>(host.ids.size())};
  }
  std::vector<DeviceVec<int>> ids, starts, rows;
  kernels::TokenGroups groups;
};

inline std::vector<int> random_tokens(size_t n, int vocab, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> pick(0, vocab - 1);
  std::vector<int> v(n);
  for (auto& x : v) x = pick(rng);
  return v;
}

}  // namespace zm::testing
