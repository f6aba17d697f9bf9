// The subcommands of the zeromini executable; each returns the process exit code.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace zm::cli {

struct RunOptions {
  std::string deck;
  std::vector<std::string> overrides;  // --set section.key=value
  std::string out_dir;                 // --out, overrides output.dir when non-empty
  std::string machine;                 // --machine: for the modules (RunInvocation::machine)
  bool print_deck = false;             // --print-deck: the whole resolved deck on screen
};
int run(int& argc, char**& argv, const RunOptions& options);

struct PlanOptions {
  std::string deck;
  std::vector<std::string> overrides;
  std::string ranks;  // "1,4,16"; empty: 1, or a mode's default
  // Per plan axis (plan/plan_extensions.hpp: plan_axes()), its values "1,2,4"; empty: the deck's.
  std::vector<std::string> axis_values;
  std::string stage = "all";     // 0..3 or all
  std::string machine;           // machine file, optional
  std::string precision;         // fp32 | mixed; empty = from the deck
  std::string format = "table";  // table | csv
  bool schedule = false;         // also each point's step schedule (table format)
  // Per mode of plan (plan/plan_extensions.hpp: plan_modes()), whether its flag was given.
  std::vector<const bool*> modes;
};
int plan(const PlanOptions& options);

int schema();

struct SweepOptions {
  std::string file;  // the sweep file (TOML)
  std::string root;  // the repository, for relative paths and the default job template
};
int sweep_expand(const SweepOptions& options);  // prints JSON on stdout

}  // namespace zm::cli
