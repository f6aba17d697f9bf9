// The module's registration (core/modules.hpp): its deck keys and their checks, the memory tier it
// gives a run, its pricing and lines in `zeromini plan` (its axis of `plan --largest`:
// with_largest_model/), and the figures of a run's host copies (transfer_figures.hpp).
#include <fmt/format.h>

#include <algorithm>

#include "core/deck_keys.hpp"
#include "core/error.hpp"
#include "core/modules.hpp"
#include "core/registry.hpp"
#include "core/stage_spec.hpp"
#include "core/validate.hpp"
#include "io/stage_figures.hpp"
#include "modules/offload/host_checkpoints.hpp"
#include "modules/offload/host_copies.hpp"
#include "modules/offload/host_state_store.hpp"
#include "modules/offload/host_tier.hpp"
#include "modules/offload/offload_cost.hpp"
#include "modules/offload/transfer_figures.hpp"
#include "plan/plan_extensions.hpp"
#include "plan/run_extensions.hpp"

namespace zm {

namespace {

const char* const kModule = "offload";

ZM_REGISTRY(HostStoreKind, add_store_kind, store_kinds)

// zero.offload_optimizer: "none", "host", or a value a module added with its store, which this
// build may lack (its module's CMake option named).
// zero.offload_params likewise, with the stores that hold parameters.
std::string check_home(const RawValue& value, const char* key, bool params) {
  if (value.type != RawValue::Type::String) return "expected a string";
  const HostStoreKind* store = host_store(value.text);
  if (value.text == "none" || value.text == "host" || (store && (!params || store->holds_params)))
    return "";
  const std::string option = option_providing(fmt::format("{} {}", key, value.text));
  if (!option.empty())
    return fmt::format("\"{}\" needs a module this build lacks: configure with -D{}=ON", value.text,
                       option);
  return fmt::format("unknown value {}", value.as_found);
}
std::string check_optimizer_home(const RawValue& value) {
  return check_home(value, "zero.offload_optimizer", false);
}
std::string check_params_home(const RawValue& value) {
  return check_home(value, "zero.offload_params", true);
}

std::vector<KeySpec> keys() {
  return {
      deck_keys::custom(
          kModule, "zero", "offload_optimizer", "none",
          "\"none\", \"host\" or \"nvme\" (with the module zero_infinity)", check_optimizer_home,
          "stages 1-3 (ZeRO-Offload): \"host\" keeps the fp32 master weights and Adam m and v of "
          "the rank's shard in host memory (pinned in CUDA builds) and runs AdamW there: the "
          "reduced gradient shard goes to the host, the updated parameters come back; \"nvme\" "
          "(ZeRO-Infinity) keeps that state in files on a drive (zero.nvme_dir), read into host "
          "memory unit by unit for the update; \"none\" keeps them on the device"),
      deck_keys::custom(
          kModule, "zero", "offload_params", "none",
          "\"none\", \"host\" or \"nvme\" (with the module zero_infinity)", check_params_home,
          "stage 3, with zero.offload_optimizer set to the same value (ZeRO-3 offload): \"host\" "
          "keeps the rank's parameter shard in host memory, where AdamW updates it, and stages it "
          "to the device for each gather of its unit; \"nvme\" (ZeRO-Infinity) keeps it in the "
          "optimizer state's files, read into host memory for each gather; \"none\" keeps it on "
          "the device"),
      deck_keys::choice(
          kModule, "model", "checkpoints", "device", {"device", "host"},
          "with model.recompute = \"blocks\" (ZeRO-Infinity's activation checkpoints): where "
          "each block's output waits for its recomputation; \"host\" in host memory (pinned in "
          "CUDA builds), copied out after the block's forward and back one block ahead of its "
          "recomputation, each copy beside a block's compute; the device keeps the last two"),
  };
}

// ZeRO-Offload moves the state a sharded optimizer holds: stage 0 replicates it, and the
// parameter shard exists only where parameters are gathered per unit.
void check_stage(const Deck& deck, const OffloadSettings& settings, int stage) {
  const char* all = deck.zero.all_stages ? " (zero.stage = \"all\" runs stages 0-3)" : "";
  if (settings.optimizer && !stage_spec(stage).shards_states())
    fail(
        "{}: zero.offload_optimizer = \"{}\" needs zero.stage 1-3, whose optimizer state is "
        "sharded; stage {} replicates it on every rank{}. Expected \"none\" at stage {}",
        deck.where("zero.offload_optimizer"), deck.value<std::string>("zero.offload_optimizer"),
        stage, all, stage);
  if (settings.params && !stage_spec(stage).gathers_parameters())
    fail(
        "{}: zero.offload_params = \"{}\" needs zero.stage = 3, the stage that holds a "
        "parameter shard and gathers it per unit; this run is stage {}{}. Expected \"none\" at "
        "stages 0-2",
        deck.where("zero.offload_params"), deck.value<std::string>("zero.offload_params"), stage,
        all);
}

// What offloading the parameters needs whatever the stage.
void check_params(const Deck& deck, const OffloadSettings& settings) {
  const std::string params = deck.value<std::string>("zero.offload_params");
  const std::string optimizer = deck.value<std::string>("zero.offload_optimizer");
  if (settings.params && !settings.store.empty() && params != optimizer)
    fail(
        "{}: zero.offload_params = \"{}\" with zero.offload_optimizer = \"{}\": the parameter "
        "shard lives with the optimizer state (on the host it is its own fp32 master only beside "
        "the state in host memory). Expected zero.offload_params = \"none\" or \"{}\" with "
        "zero.offload_optimizer = \"{}\"",
        deck.where("zero.offload_params"), params, optimizer, optimizer, optimizer);
  if (!settings.params) return;
  if (params != optimizer)
    fail(
        "{}: zero.offload_params = \"{}\" needs zero.offload_optimizer = \"{}\": AdamW "
        "writes the parameter shard, so it is updated where the optimizer state lives. Expected "
        "zero.offload_optimizer = \"{}\" too, or zero.offload_params = \"none\"",
        deck.where("zero.offload_params"), params, params, params);
  if (settings.secondary_shards)
    fail(
        "{}: zero.offload_params = \"{}\" with zero.secondary_shard_size (hpZ, {}): under hpZ "
        "the parameter shard is the secondary copy, which an all-gather across the groups "
        "refills after every update; that collective writes device memory (NCCL reads and writes "
        "no host memory), so the shard stays on the device. Expected zero.offload_params = "
        "\"none\" with hpZ (zero.offload_optimizer = \"host\" works with it)",
        deck.where("zero.offload_params"), params, deck.where("zero.secondary_shard_size"));
}

// The planner's figures and seconds (offload_cost.hpp): the copies whatever the machine, their
// time (which needs its [host] side) with one.
void price(const Deck& deck, int stage, const ZeroMesh& mesh, const Machine* machine,
           double backward_seconds, PlanPoint& p) {
  const bool offloaded = offloads(offload_settings(deck), stage_spec(stage));
  p.figures["offloads"] = offloaded ? 1 : 0;
  if (machine) require_host_side(deck, stage, *machine);
  if (!offloaded) return;
  OffloadCost cost;
  if (machine)
    cost = price_offload(deck, stage, mesh, *machine);
  else
    cost.transfers = run_transfers(deck, stage, mesh);
  p.figures["device_to_host_bytes"] = cost.transfers.bytes[0];
  p.figures["host_to_device_bytes"] = cost.transfers.bytes[1];
  p.figures["device_to_host_copies"] = static_cast<double>(cost.transfers.calls[0]);
  p.figures["host_to_device_copies"] = static_cast<double>(cost.transfers.calls[1]);
  if (!machine) return;
  p.figures["transfer_s"] = cost.transfer_seconds;
  p.figures["host_update_s"] = cost.host_update_seconds;
  p.figures["offload_s"] = cost.step_seconds();
  p.added_serial_seconds += cost.step_seconds();
  p.added_exposed_seconds += cost.exposed_seconds(backward_seconds);
}

double figure(const PlanPoint& p, const char* name) {
  const auto found = p.figures.find(name);
  return found == p.figures.end() ? 0.0 : found->second;
}

bool any_offload(const std::vector<PlanPoint>& points) {
  return std::any_of(points.begin(), points.end(),
                     [](const PlanPoint& p) { return figure(p, "offloads") > 0; });
}

std::string gb(double bytes) {
  return fmt::format("{:.3f}", bytes / 1e9);
}

std::string plan_note(const Deck& deck) {
  const OffloadSettings settings = offload_settings(deck);
  if (!settings.any()) return "";
  return fmt::format(
      "  ZeRO-Offload: zero.offload_optimizer = \"{}\", zero.offload_params = \"{}\": at "
      "stages 1-3 the fp32 master, Adam m and v {}, AdamW on the host{} (memory column host: "
      "per rank; host/node: x the ranks on a node); d2h / h2d: GB copied per step per rank "
      "each way; stage 0 offloads nothing\n",
      deck.value<std::string>("zero.offload_optimizer"),
      deck.value<std::string>("zero.offload_params"),
      settings.store.empty() ? "on the host"
                             : fmt::format("in the \"{}\" store's files", settings.store),
      settings.params
          ? ", and at stage 3 the parameter shard too, staged to the device before each gather"
          : "");
}

// The CSV, where the deck sets ZeRO-Offload: its settings, the host bytes per node, the copies per
// direction and (with a machine) their seconds, the host update's and the step's share.
PlanColumns csv_columns() {
  PlanColumns columns;
  columns.at = PlanColumnsAt::AtEnd;
  columns.shown = [](const Deck& deck, const std::vector<PlanPoint>&) {
    return offload_settings(deck).any();
  };
  columns.header =
      ",offload_optimizer,offload_params,offloads,host_bytes_per_node,device_to_host_bytes,"
      "host_to_device_bytes,device_to_host_copies,host_to_device_copies,transfer_s,host_update_s,"
      "offload_s";
  columns.row = [](const Deck& deck, const PlanPoint& p, bool have_machine) {
    std::string row = fmt::format(
        ",{},{},{},{:.0f},{:.0f},{:.0f},{:.0f},{:.0f}",
        deck.value<std::string>("zero.offload_optimizer"),
        deck.value<std::string>("zero.offload_params"), figure(p, "offloads") > 0 ? "yes" : "no",
        p.host_bytes_per_node, figure(p, "device_to_host_bytes"), figure(p, "host_to_device_bytes"),
        figure(p, "device_to_host_copies"), figure(p, "host_to_device_copies"));
    row += have_machine ? fmt::format(",{:.6g},{:.6g},{:.6g}", figure(p, "transfer_s"),
                                      figure(p, "host_update_s"), figure(p, "offload_s"))
                        : ",,,";
    return row;
  };
  return columns;
}

PlanTableColumns table_columns() {
  PlanTableColumns columns;
  columns.shown = any_offload;
  columns.heading = [](bool have_machine) {
    std::string text = fmt::format(" | {:>10} {:>9} {:>9}", "host/node", "d2h", "h2d");
    if (have_machine) text += fmt::format(" {:>9} {:>9} {:>9}", "copy s", "hostopt s", "offload s");
    return text;
  };
  columns.cells = [](const PlanPoint& p, bool have_machine) {
    std::string text =
        fmt::format(" | {:>10} {:>9} {:>9}", gb(p.host_bytes_per_node),
                    gb(figure(p, "device_to_host_bytes")), gb(figure(p, "host_to_device_bytes")));
    if (have_machine)
      text += fmt::format(" {:>9.4g} {:>9.4g} {:>9.4g}", figure(p, "transfer_s"),
                          figure(p, "host_update_s"), figure(p, "offload_s"));
    return text;
  };
  return columns;
}

// With offload somewhere and a machine: how its seconds are priced, from the machine's [host].
std::string footnote(const std::vector<PlanPoint>& points, const Machine* machine) {
  if (!machine || !any_offload(points) || !machine->host) return "";
  const HostSide& host = *machine->host;
  return fmt::format(
      "Offload ({} host side): {:.1f} GiB host memory per node, {} at {:.4g} GB/s per device each "
      "way{}, host AdamW {:.4g} G parameters/s per device with all {} devices of a node updating "
      "(the node's rate is shared by the ranks on it). copy s: every copy of the step at that "
      "rate; hostopt s: the rank's optimizer elements at its share of the host rate; offload s: "
      "what offload adds to the step: at stages 2-3 with one shard group each micro-step's "
      "gradient shard copied to the host as backward completes the unit (with one micro-step and "
      "no fp32 sum unwaited, beside backward, else waited); after backward (else) the first "
      "unit's gradients to the host, then per unit the longer of its host AdamW and the next "
      "unit's copy; the update's copy back (waited), and with zero.offload_params each gather's "
      "shard staged to the device first (waited). The serial step adds all of it, the "
      "overlapped one what backward (its FLOPs' share of the compute) does not hide. fits: 'no' "
      "where "
      "device memory does not fit, 'host' where the node's host memory does not "
      "(plan/offload_cost.hpp).\n",
      machine->name, host.memory_per_node_bytes / (1024.0 * 1024 * 1024), host.link,
      host.link_bandwidth / 1e9,
      host.link_latency > 0 ? fmt::format(", {:.3g} us per copy", host.link_latency * 1e6) : "",
      host.adamw_params_per_second / 1e9, machine->devices_per_node);
}

}  // namespace

void add_host_store(HostStoreKind kind) {
  add_store_kind(std::move(kind));
}

const HostStoreKind* host_store(const std::string& value) {
  for (const HostStoreKind& kind : store_kinds())
    if (kind.value == value) return &kind;
  return nullptr;
}

OffloadSettings offload_settings(const Deck& deck) {
  OffloadSettings settings;
  const std::string optimizer = deck.value<std::string>("zero.offload_optimizer");
  settings.optimizer = optimizer != "none";
  if (const HostStoreKind* kind = host_store(optimizer)) {
    settings.store = optimizer;
    settings.make_store = kind->maker(deck);
    settings.store_buffers = kind->buffers(deck);
    settings.grads_in_store = kind->holds_gradients && kind->holds_gradients(deck);
  }
  const std::string params = deck.value<std::string>("zero.offload_params");
  settings.params = params != "none";
  settings.params_in_store = settings.params && params != "host";
  // hpZ's key where the module that owns it is built (core/deck_keys.hpp module_setting).
  settings.secondary_shards = module_setting(deck, "zero.secondary_shard_size", "0") != "0";
  return settings;
}

void register_module_offload() {
  add_deck_keys(keys());
  add_validation([](const Deck& deck, const RunShape& shape, Validation purpose) {
    const OffloadSettings settings = offload_settings(deck);
    if (purpose == Validation::Run) check_stage(deck, settings, shape.stage);
    // A store's own settings (a directory of this machine): for a run, not a plan.
    if (purpose == Validation::Run && !settings.store.empty())
      host_store(settings.store)->check(deck);
    check_params(deck, settings);
    if (purpose == Validation::Run) check_checkpoints(deck);
  });
  add_run_configurer([](const Deck& deck, int, RunExtensions& extensions) {
    extensions.tier = host_tier(offload_settings(deck));
    extensions.checkpoints = checkpoint_home(deck);
  });
  add_plan_pricing(price);
  add_plan_pricing([](const Deck& deck, int stage, const ZeroMesh&, const Machine* machine, double,
                      PlanPoint& point) { price_checkpoints(deck, stage, machine, point); });
  add_plan_note(plan_note);
  add_plan_columns(csv_columns());
  add_plan_columns(checkpoint_columns());
  add_plan_table_columns(table_columns());
  add_plan_footnote(footnote);
  add_training_extension(make_transfer_figures);
  add_stage_description(describe_transfers);
}

}  // namespace zm
