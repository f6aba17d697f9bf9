#include "io/run_status.hpp"

namespace zm {

std::string abort_record_path(const std::string& results_path) {
  return results_path + ".abort";
}

}  // namespace zm
