#include "modules/inspect/inspect.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "core/error.hpp"
#include "core/precision.hpp"
#include "core/regular_file.hpp"
#include "core/stage_spec.hpp"
#include "core/zero_mesh.hpp"
#include "io/checkpoint.hpp"
#include "io/checkpoint_guard.hpp"
#include "io/h5.hpp"
#include "io/results_file.hpp"
#include "io/stage_figures.hpp"
#include "model/layout.hpp"
#include "modules/inspect/results_lines.hpp"

namespace zm {

namespace {
bool is_mixed_name(const std::string& text) {
  Precision precision = Precision::FP32;
  return parse_precision(text, precision) && is_mixed(precision);
}
}  // namespace

namespace {

std::vector<float> read_floats(hid_t file, const std::string& path, const std::string& name) {
  h5::Handle set(H5Dopen2(file, name.c_str(), H5P_DEFAULT));
  if (!set.valid()) fail("{}: missing dataset {}", path, name);
  h5::Handle space(H5Dget_space(set));
  const hssize_t n = H5Sget_simple_extent_npoints(space);
  std::vector<float> values(static_cast<size_t>(n));
  if (n > 0 && H5Dread(set, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()) < 0)
    fail("{}: reading {} failed (corrupted or truncated file): {}", path, name, h5::last_error());
  return values;
}

ModelConfig checkpoint_model(hid_t file) {
  ModelConfig m;
  m.layers = h5::read_attr_int(file, "model.layers");
  m.heads = h5::read_attr_int(file, "model.heads");
  m.dim = h5::read_attr_int(file, "model.dim");
  m.vocab = h5::read_attr_int(file, "model.vocab");
  m.seq_len = h5::read_attr_int(file, "model.seq_len");
  return m;
}

// A model dimension's size (core/zero_mesh.hpp) the checkpoint was written with (1 when not
// recorded), and the ranks of one model-parallel group: the product over this build's dimensions.
int64_t size_written(hid_t file, const ModelDimension& d) {
  return h5::has_attr(file, d.name) ? h5::read_attr_int(file, d.name) : 1;
}
int64_t model_parallel_written(hid_t file) {
  int64_t size = 1;
  for (const ModelDimension& d : model_dimensions()) size *= size_written(file, d);
  return size;
}

// The shard groups that wrote the checkpoint (hybrid sharding, hpZ), when recorded: groups of
// the data-parallel ranks, those holding the same parts of the model.
std::string describe_shard_size(hid_t file) {
  if (!h5::has_attr(file, "shard_size")) return "";
  const int64_t ranks = h5::read_attr_int(file, "ranks") / model_parallel_written(file);
  const int64_t group = h5::read_attr_int(file, "shard_size");
  // "hpz": the attribute's name in checkpoints written before it was "sub_sharded".
  const auto flag = [&](const char* name) {
    return h5::has_attr(file, name) && h5::read_attr_int(file, name) != 0;
  };
  const bool hpz = flag("sub_sharded") || flag("hpz");
  if (hpz)
    return fmt::format(
        "  shard size        {} (hpZ: parameters in {} groups of {} ranks, optimizer state "
        "over all ranks)\n",
        group, ranks / group, group);
  if (group >= ranks)
    return fmt::format("  shard size        {} (all ranks: one shard group)\n", group);
  return fmt::format("  shard size        {} ({} shard groups of {} ranks: hybrid sharding)\n",
                     group, ranks / group, group);
}

// The model dimensions it was written with; the data is the whole model's whatever they were.
std::string describe_model_dimensions(hid_t file) {
  const int64_t ranks = h5::read_attr_int(file, "ranks");
  std::string out;
  for (const ModelDimension& d : model_dimensions()) {
    std::string label = d.group;
    std::replace(label.begin(), label.end(), '-', ' ');
    const int64_t size = size_written(file, d);
    const std::string stored = fmt::format("(units stored whole: resumes at any {})", d.name);
    out += size == 1 ? fmt::format("  {:<18}{} 1 {}\n", label, d.name, stored)
                     : fmt::format("  {:<18}{} {} x {} data-parallel ranks {}\n", label, d.name,
                                   size, ranks / size, stored);
  }
  return out;
}

std::string describe_checkpoint(hid_t file, const std::string& path) {
  const ModelConfig m = checkpoint_model(file);
  const ParamLayout layout(m);
  std::string out = fmt::format("{}: zeromini checkpoint (format version {})\n", path,
                                h5::read_attr_int(file, "format_version"));
  out += fmt::format("  steps completed   {}\n", h5::read_attr_int(file, "step"));
  out += fmt::format("  written by        stage {} on {} ranks (revision {})\n",
                     h5::read_attr_int(file, "stage"), h5::read_attr_int(file, "ranks"),
                     h5::read_attr_string(file, "git_revision"));
  out += describe_shard_size(file);
  out += describe_model_dimensions(file);
  if (h5::has_attr(file, "precision")) {
    const std::string precision = h5::read_attr_string(file, "precision");
    out +=
        fmt::format("  precision         {}{}\n", precision,
                    is_mixed_name(precision) ? " (the states hold the fp32 master weights)" : "");
  }
  out += fmt::format(
      "  model             {} layers, dim {}, {} heads, vocab {}, seq_len {}: {} "
      "parameters\n",
      m.layers, m.dim, m.heads, m.vocab, m.seq_len, layout.real_param_count());
  out += fmt::format("  data position     step {} of {}\n",
                     h5::read_attr_int(file, "data_position_step"),
                     h5::read_attr_string(file, "data_source"));
  out += fmt::format("  rng               seed {} ({})\n", h5::read_attr_int(file, "rng_seed"),
                     h5::read_attr_string(file, "rng"));
  double sumsq = 0;
  size_t elements = 0;
  for (const char* state : {"params", "adam_m", "adam_v"}) {
    size_t state_elements = 0;
    for (int u = 0; u < layout.num_units(); ++u) {
      const auto values = read_floats(file, path, fmt::format("{}/unit_{:04d}", state, u));
      if (static_cast<int64_t>(values.size()) != layout.unit(u).size)
        fail("{}: {}/unit_{:04d} has {} elements, expected {}", path, state, u, values.size(),
             layout.unit(u).size);
      state_elements += values.size();
      if (std::string(state) == "params")
        for (float v : values) sumsq += static_cast<double>(v) * v;
    }
    out += fmt::format("  /{:<16} {} units, {} elements, Fletcher32 checksums verified\n", state,
                       layout.num_units(), state_elements);
    elements += state_elements;
  }
  out += fmt::format("  parameter norm    {:.6g}\n", std::sqrt(sumsq));
  return out;
}

// What rank 0 sent out of its node over the stage (comm/cross_node.hpp), where the file has it
// and some left.
std::string describe_cross_node(hid_t group) {
  if (!h5::exists(group, "comm_bytes_cross_node")) return "";
  std::vector<hsize_t> dims;
  const auto bytes = h5::read_doubles(group, "comm_bytes_cross_node", dims);
  std::string out = "    MiB sent out of its node by rank 0:";
  double total = 0;
  for (int op = 0; op < kCommOps; ++op) {
    out += fmt::format(" {} {:.3f}", comm_op_name(static_cast<CommOp>(op)),
                       bytes[op] / (1024.0 * 1024.0));
    total += bytes[op];
  }
  return total > 0 ? out + "\n" : "";
}

// One stage of a results file: its rows, throughput, segments, memory and traffic.
std::string describe_stage(hid_t group, int stage) {
  std::string out;
  std::vector<hsize_t> dims;
  const auto loss = h5::read_doubles(group, "loss", dims);
  const auto times = h5::read_doubles(group, "step_times", dims);
  out += fmt::format("  stage {}: {} steps", stage, loss.size());
  if (h5::exists(group, "step") && !loss.empty()) {
    std::vector<hsize_t> step_dims;
    const auto steps = h5::read_doubles(group, "step", step_dims);
    out += fmt::format(" (steps {:.0f}-{:.0f})", steps.front(), steps.back());
  }
  if (!loss.empty()) out += fmt::format(", loss {:.4f} -> {:.4f}", loss.front(), loss.back());
  if (dims.size() == 3 && dims[0] > 0) {
    double total = 0;
    for (hsize_t s = 0; s < dims[0]; ++s) total += times[(s * dims[1] + 0) * dims[2] + 4];
    out +=
        fmt::format(", mean step {:.1f} ms (rank 0)", 1e3 * total / static_cast<double>(dims[0]));
  }
  if (h5::has_attr(group, "tokens_per_second_per_rank"))
    out += fmt::format(", {:.0f} tokens/s per rank",
                       h5::read_attr_double(group, "tokens_per_second_per_rank"));
  out += "\n";
  out += describe_stage_throughput(group);
  for (const StageDescription& describe : stage_descriptions()) out += describe(group);
  if (h5::has_attr(group, "segments"))
    for (const std::string& segment : h5::read_attr_strings(group, "segments"))
      out += fmt::format("    run {}\n", segment);
  if (h5::exists(group, "memory_peak")) {
    const auto peak = h5::read_doubles(group, "memory_peak", dims);
    out += "    peak MiB (max over ranks):";
    // Files written before the host category have one column fewer.
    for (int c = 0; c < std::min<int>(kMemCategories, static_cast<int>(dims[1])); ++c) {
      double worst = 0;
      for (hsize_t r = 0; r < dims[0]; ++r) worst = std::max(worst, peak[r * dims[1] + c]);
      out += fmt::format(" {} {:.2f}", mem_category_name(static_cast<MemCategory>(c)),
                         worst / (1024.0 * 1024.0));
    }
    out += "\n";
    const auto bytes = h5::read_doubles(group, "comm_bytes", dims);
    out += "    MiB sent by rank 0:";
    for (int op = 0; op < kCommOps; ++op)
      out += fmt::format(" {} {:.3f}", comm_op_name(static_cast<CommOp>(op)),
                         bytes[op] / (1024.0 * 1024.0));
    out += "\n";
    out += describe_cross_node(group);
  }
  return out;
}

std::string describe_results(hid_t file, const std::string& path) {
  std::string out = fmt::format("{}: zeromini results file\n", path);
  out += fmt::format("  status            {}\n",
                     describe_run_status(path, h5::read_attr_string(file, "status")));
  out += fmt::format("  world size        {}\n", h5::read_attr_int(file, "world_size"));
  out += fmt::format("  deck              {}\n", h5::read_attr_string(file, "deck_path"));
  out += fmt::format("  revision          {}\n", h5::read_attr_string(file, "git_revision"));
  out += fmt::format("  started / written {} / {}\n", h5::read_attr_string(file, "start_time"),
                     h5::read_attr_string(file, "written_time"));
  if (h5::has_attr(file, "figure_of_merit"))
    out += fmt::format("  figure of merit   {:.1f} {}\n",
                       h5::read_attr_double(file, "figure_of_merit"),
                       h5::read_attr_string(file, "figure_of_merit_units"));
  out += describe_manifest(file);
  for (const StageSpec& spec : kStageSpecs) {
    const std::string name = fmt::format("stage_{}", spec.stage);
    if (!h5::exists(file, name)) continue;
    out += describe_stage(h5::open_group(file, name), spec.stage);
  }
  return out;
}

herr_t list_object(hid_t, const char* name, const H5O_info_t* info, void* out) {
  auto* text = static_cast<std::string*>(out);
  const char* kind = info->type == H5O_TYPE_GROUP     ? "group"
                     : info->type == H5O_TYPE_DATASET ? "dataset"
                                                      : "object";
  *text += fmt::format("  {:<8} /{}\n", kind, name[0] == '.' ? "" : name);
  return 0;
}

}  // namespace

std::string describe_hdf5(const std::string& path, Watchdog& watchdog) {
  require_regular_file(path, "file to inspect");  // before any open: a FIFO would block it
  // A checkpoint is checked whole (io/checkpoint_guard.hpp); other files are opened as they are.
  const std::string problem = check_checkpoint_file(path, MPI_COMM_SELF, watchdog, true);
  if (!problem.empty()) throw Error(problem);
  h5::Handle file = h5::open_file(path);
  if (h5::has_attr(file, "format_version") && h5::has_attr(file, "model.layers"))
    return describe_checkpoint(file, path);
  if (h5::has_attr(file, "status") && h5::has_attr(file, "world_size"))
    return describe_results(file, path);
  std::string out = fmt::format("{}: HDF5 file not written by zeromini; its objects:\n", path);
  H5Ovisit(file, H5_INDEX_NAME, H5_ITER_NATIVE, list_object, &out);
  return out;
}

int export_parameters(const std::string& checkpoint, const std::string& out, Watchdog& watchdog) {
  require_regular_file(checkpoint, "checkpoint to export");
  require_regular_or_absent(out, "export's output file");
  const std::string problem = check_checkpoint_file(checkpoint, MPI_COMM_SELF, watchdog);
  if (!problem.empty()) throw Error(problem);
  h5::Handle in = h5::open_file(checkpoint);
  if (!h5::has_attr(in, "format_version") || !h5::has_attr(in, "model.layers"))
    fail("{}: not a zeromini checkpoint", checkpoint);
  const int64_t version = h5::read_attr_int(in, "format_version");
  if (version != kCheckpointFormatVersion)
    fail("{}: checkpoint format version {} is not supported (this build reads version {})",
         checkpoint, version, kCheckpointFormatVersion);
  const ModelConfig m = checkpoint_model(in);
  const ParamLayout layout(m);
  h5::Handle file = h5::create_file(out);
  h5::write_attr(file, "source_checkpoint", checkpoint);
  h5::write_attr(file, "step", h5::read_attr_int(in, "step"));
  h5::write_attr(file, "layout",
                 std::string("fp32; weights (out, in) as torch.nn.Linear; "
                             "wte has the real vocabulary's rows"));
  for (const char* key :
       {"model.layers", "model.heads", "model.dim", "model.vocab", "model.seq_len"})
    h5::write_attr(file, key, h5::read_attr_int(in, key));
  int count = 0;
  for (int u = 0; u < layout.num_units(); ++u) {
    const auto unit = read_floats(in, checkpoint, fmt::format("params/unit_{:04d}", u));
    for (int t : layout.unit(u).tensors) {
      const TensorInfo& info = layout.tensors()[static_cast<size_t>(t)];
      std::vector<hsize_t> shape(info.shape.begin(), info.shape.end());
      if (info.name == "wte.weight") shape[0] = static_cast<hsize_t>(m.vocab);
      const hsize_t n =
          std::accumulate(shape.begin(), shape.end(), hsize_t(1), std::multiplies<>());
      h5::Handle space(H5Screate_simple(static_cast<int>(shape.size()), shape.data(), nullptr));
      h5::Handle set(H5Dcreate2(file, info.name.c_str(), H5T_NATIVE_FLOAT, space, H5P_DEFAULT,
                                H5P_DEFAULT, H5P_DEFAULT));
      if (!set.valid() || (n > 0 && H5Dwrite(set, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT,
                                             unit.data() + info.offset) < 0))
        // The output could not be written (a full disk, a quota): exit status 4, as for a run.
        throw IoError(fmt::format("{}: cannot write {}: {}", out, info.name, h5::last_error()));
      ++count;
    }
  }
  return count;
}

}  // namespace zm
