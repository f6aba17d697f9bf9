#include "io/run_figures.hpp"

namespace zm {

namespace {
std::vector<RunFigures>& registered() {
  static std::vector<RunFigures> all;
  return all;
}
}  // namespace

void add_run_figures(RunFigures figures) {
  registered().push_back(std::move(figures));
}

const std::vector<RunFigures>& run_figures() {
  return registered();
}

}  // namespace zm
