// The subcommands of the zeromini executable; each returns the process exit code.
#pragma once

#include <string>
#include <vector>

namespace zm::cli {

struct RunOptions {
  std::string deck;
  std::vector<std::string> overrides;  // --set section.key=value
  std::string out_dir;                 // --out, overrides output.dir when non-empty
};
int run(int& argc, char**& argv, const RunOptions& options);

struct PlanOptions {
  std::string deck;
  std::vector<std::string> overrides;
  std::string ranks = "1";       // "1,4,16"
  std::string stage = "all";     // 0..3 or all
  std::string machine;           // machine file, optional
  std::string precision;         // fp32 | mixed; empty = from the deck
  std::string format = "table";  // table | csv
};
int plan(const PlanOptions& options);

int inspect(int& argc, char**& argv, const std::string& file);
int export_checkpoint(int& argc, char**& argv, const std::string& checkpoint,
                      const std::string& out);
int schema();

struct SweepOptions {
  std::string file;  // the sweep file (TOML)
  std::string root;  // the repository, for relative paths and the default job template
};
int sweep_expand(const SweepOptions& options);  // prints JSON on stdout

}  // namespace zm::cli
