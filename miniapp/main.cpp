// zeromini: train a GPT-2-style model under ZeRO stage 0-3 and report time, memory and traffic.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>
#include <utility>
#include <vector>

#include "commands.hpp"
#include "core/build_info.hpp"
#include "core/error.hpp"
#include "core/exit_codes.hpp"
#include "core/modules.hpp"
#include "core/stop_signal.hpp"
#include "plan/plan_extensions.hpp"
#include "train/command_extensions.hpp"

namespace {

CLI::App* add_plan(CLI::App& app, zm::cli::PlanOptions& options) {
  CLI::App* plan = app.add_subcommand(
      "plan", "Predict per-rank memory, traffic and step time for any rank count (no MPI)");
  plan->add_option("deck", options.deck, "Input deck (TOML)")->required();
  // The modules' modes of plan (plan/plan_extensions.hpp), their defaults of --ranks.
  std::string ranks_default = "1";
  for (const auto& mode : zm::plan_modes())
    if (!mode->default_ranks().empty()) ranks_default += ", or " + mode->default_ranks();
  plan->add_option("--ranks", options.ranks,
                   "Rank counts, comma separated (e.g. 1,4,16); default " + ranks_default);
  // The modules' axes (plan/plan_extensions.hpp), e.g. a degree of model parallelism.
  options.axis_values.resize(zm::plan_axes().size());
  for (size_t i = 0; i < zm::plan_axes().size(); ++i)
    plan->add_option(zm::plan_axes()[i].option, options.axis_values[i], zm::plan_axes()[i].help);
  plan->add_option("--stage", options.stage, "ZeRO stage 0..3 or all")->capture_default_str();
  plan->add_option("--machine", options.machine,
                   "Machine file (inputs/machines/*.toml) for fit and step-time estimates");
  plan->add_option("--precision", options.precision,
                   "Memory model: fp32 or mixed (2+2+12 bytes per parameter); default: the "
                   "deck's train.precision");
  plan->add_option("--set", options.overrides, "Override a deck key (as for run)")
      ->type_name("KEY=VALUE");
  plan->add_option("--format", options.format, "Output: table or csv")->capture_default_str();
  // The modules' modes, each flag with those that go with it.
  for (const auto& mode : zm::plan_modes()) {
    std::vector<zm::PlanFlag> flags = mode->flags();
    flags.insert(flags.begin(), mode->flag());
    options.modes.push_back(flags.front().value);
    for (const zm::PlanFlag& flag : flags)
      if (flag.count)
        plan->add_flag(flag.flag, *flag.count, flag.help);
      else
        plan->add_flag(flag.flag, *flag.value, flag.help);
  }
  plan->add_flag("--schedule", options.schedule,
                 "Also print each point's step schedule for one block: the collectives the run "
                 "posts, with their strategy, group, counts and where they are posted and waited "
                 "(table format)");
  return plan;
}

// `sweep` and its subcommand `expand`, which it returns.
CLI::App* add_sweep(CLI::App& app, zm::cli::SweepOptions& options) {
  CLI::App* sweep = app.add_subcommand(
      "sweep", "Scaling studies (sweep files for scripts/sweep.py, inputs/sweeps/*.toml)");
  sweep->require_subcommand(1);
  sweep->footer(
      "A sweep file gives a deck and the axes of a study (stages, nodes, ranks_per_node, models, "
      "shard_sizes, recompute, tp, quantize_weights, quantize_grads, error_feedback); each "
      "combination is a point, one job. repeat = N runs every point N times, in alternating "
      "rounds: round 1 runs every point once (the -r0 points), round 2 every point again (-r1), "
      "and so on, so that a point's repeats never run back to back and a slow spell of the "
      "machine falls on a round, not on one point. `expand` lists the points in that order; "
      "scripts/sweep.py runs (--local), submits (sbatch) and prints (--dry-run) them in it, and "
      "scripts/collect.py takes the medians over the repeats. Reference: scripts/README.md.");
  CLI::App* expand = sweep->add_subcommand(
      "expand", "Check a sweep file and print its settings and its points (one job each) as JSON");
  expand->add_option("file", options.file, "Sweep file (TOML)")->required();
  expand
      ->add_option("--root", options.root,
                   "Repository: relative paths not found in the current directory or beside "
                   "the sweep file are looked up here; the Slurm template defaults to "
                   "ROOT/scripts/slurm/zeromini.sbatch")
      ->type_name("ROOT");
  return expand;
}

// The run subcommand and its options.
CLI::App* add_run(CLI::App& app, zm::cli::RunOptions& options) {
  CLI::App* run = app.add_subcommand(
      "run", "Train the model of a deck (launch with mpiexec/srun; one rank per device)");
  run->add_option("deck", options.deck, "Input deck (TOML)")->required();
  run->add_option("--set", options.overrides,
                  "Override a deck key: --set section.key=value (repeatable), e.g. "
                  "--set zero.stage=3 --set train.steps=20")
      ->type_name("KEY=VALUE");
  run->add_option("--out", options.out_dir, "Output directory (overrides output.dir)");
  run->add_flag("--print-deck", options.print_deck,
                "Print the whole resolved deck (every key, defaults filled in) at start, not only "
                "the settings that differ from the defaults; it is in OUT/deck.toml either way");
  run->add_option("--machine", options.machine,
                  "Machine file (inputs/machines/*.toml), for what the modules measure against "
                  "it (its peak per precision, its prices)")
      ->type_name("FILE");
  // What the modules add to the command (train/command_extensions.hpp).
  for (const auto& extension : zm::run_command_extensions())
    for (const zm::CommandOption& option : extension->options())
      run->add_option(option.flag, *option.value, option.help)->type_name(option.value_name);
  return run;
}

// The modules' subcommands (train/command_extensions.hpp), each with the subcommand it is.
std::vector<std::pair<CLI::App*, zm::Subcommand*>> add_subcommands(CLI::App& app) {
  std::vector<std::pair<CLI::App*, zm::Subcommand*>> added;
  for (const auto& subcommand : zm::subcommands()) {
    CLI::App* command = app.add_subcommand(subcommand->name(), subcommand->help());
    for (const zm::CommandArgument& argument : subcommand->arguments())
      command->add_option(argument.name, *argument.value, argument.help)->required();
    for (const zm::CommandOption& option : subcommand->options())
      command->add_option(option.flag, *option.value, option.help)->type_name(option.value_name);
    added.emplace_back(command, subcommand.get());
  }
  return added;
}

}  // namespace

int main(int argc, char** argv) {
  // First of all: a signal from here on is recorded (run) or ends the process (the others).
  zm::install_stop_signals();
  // Then the modules of this build (core/modules.hpp): their deck keys, checks and run options.
  zm::register_modules();
  CLI::App app{
      "zeromini: a mini-app that trains a GPT-2-style transformer under ZeRO stages 0-3 "
      "(Rajbhandari et al., SC'20) with Kokkos, MPI/NCCL and HDF5, and reports time, memory "
      "and communication per rank."};
  app.set_version_flag(
      "--version", [] { return zm::version_report(); },
      "Print the git revision, Kokkos version and backends, MPI library, HDF5 "
      "version and whether NCCL is built in");
  app.require_subcommand(1);
  app.footer("Run `zeromini SUBCOMMAND --help` for the options of each subcommand.");

  zm::cli::RunOptions run_options;
  CLI::App* run = add_run(app, run_options);

  zm::cli::PlanOptions plan_options;
  CLI::App* plan = add_plan(app, plan_options);

  const std::vector<std::pair<CLI::App*, zm::Subcommand*>> module_commands = add_subcommands(app);

  auto* schema = app.add_subcommand(
      "schema", "List every deck key with its default, allowed values and meaning");

  zm::cli::SweepOptions sweep_options;
  CLI::App* expand = add_sweep(app, sweep_options);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    // CLI11 prints the message (or the help, or the version) and gives its own status; a
    // command line it refuses is bad input like any other (2), --help and --version succeed.
    return app.exit(error) == 0 ? 0 : zm::kExitBadInput;
  }
  if (!*run) zm::stop_signals_end_process();  // only a run has a step boundary to stop at

  try {
    if (*run) return zm::cli::run(argc, argv, run_options);
    if (*plan) return zm::cli::plan(plan_options);
    for (const auto& [command, subcommand] : module_commands)
      if (*command) return subcommand->run(argc, argv);
    if (*schema) return zm::cli::schema();
    if (*expand) return zm::cli::sweep_expand(sweep_options);
  } catch (const zm::IoError& error) {
    // An output that could not be written (a file on a full disk).
    std::fprintf(stderr, "zeromini: I/O error: %s\n", error.what());
    return zm::kExitIoError;
  } catch (const zm::Error& error) {
    // What the user gave: a file that is missing, not regular or not what it should be, a deck,
    // an option (the README's exit-status table, for every subcommand).
    std::fprintf(stderr, "zeromini: error: %s\n", error.what());
    return zm::kExitBadInput;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "zeromini: internal error: %s\n", error.what());
    return zm::kExitRankFailed;
  }
  return 0;
}
