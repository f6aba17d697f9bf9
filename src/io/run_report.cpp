#include "io/run_report.hpp"

namespace zm {

namespace {
std::vector<RunReport>& registered() {
  static std::vector<RunReport> all;
  return all;
}
}  // namespace

void add_run_report(RunReport added) {
  registered().push_back(std::move(added));
}

const std::vector<RunReport>& run_reports() {
  return registered();
}

}  // namespace zm
