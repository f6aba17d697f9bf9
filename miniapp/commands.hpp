// The subcommands of the zeromini executable; each returns the process exit code.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace zm {
struct Deck;
struct Machine;
struct LargestAxis;
}  // namespace zm

namespace zm::cli {

struct RunOptions {
  std::string deck;
  std::vector<std::string> overrides;  // --set section.key=value
  std::string out_dir;                 // --out, overrides output.dir when non-empty
  std::string machine;                 // --machine: its peak for the deck's precision is MFU's
  std::string peak_tflops;             // --peak-tflops: the peak per device, TFLOP/s
};
int run(int& argc, char**& argv, const RunOptions& options);

struct PlanOptions {
  std::string deck;
  std::vector<std::string> overrides;
  std::string ranks;  // "1,4,16"; empty: 1, or 1,2,4,...,1024 with largest
  // Per plan axis (plan/plan_extensions.hpp: plan_axes()), its values "1,2,4"; empty: the deck's.
  std::vector<std::string> axis_values;
  std::string stage = "all";     // 0..3 or all
  std::string machine;           // machine file, optional
  std::string precision;         // fp32 | mixed; empty = from the deck
  std::string format = "table";  // table | csv
  bool largest = false;          // the largest model that fits, per ranks x stage x option
  bool schedule = false;         // also each point's step schedule (table format)
  // With largest: which modules' axes were asked for (plan/largest.hpp: largest_axes(), by index).
  std::vector<int> axes;
};
int plan(const PlanOptions& options);
// `plan --largest` (cmd_plan_largest.cpp), for the deck as plan() resolved it (its precision)
// at each point of the plan's axes (`decks`, the first the deck's own when no axis is given).
int plan_largest(const std::vector<Deck>& decks, const Machine& machine,
                 const std::vector<int64_t>& devices, const std::vector<int>& stages,
                 const std::string& format, const LargestAxis* axis);

int schema();

struct SweepOptions {
  std::string file;  // the sweep file (TOML)
  std::string root;  // the repository, for relative paths and the default job template
};
int sweep_expand(const SweepOptions& options);  // prints JSON on stdout

}  // namespace zm::cli
