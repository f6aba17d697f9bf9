#include "io/run_report.hpp"

#include "core/registry.hpp"

namespace zm {

ZM_REGISTRY(RunReport, add_run_report, run_reports)

}  // namespace zm
