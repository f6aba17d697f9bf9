// The bytes that left each rank's node (cross_node.hpp) in a run's results, and in the plan: the
// per-rank dataset comm_bytes_cross_node of /stage_<s> (bytes over the stage's steps, like
// comm_bytes_inter_group), the summary.json member bytes_per_rank_per_step_cross_node, the closing
// table's line per stage once some stage sent any; the planner's figure, its CSV column
// cross_node_bytes (after the all-to-all columns) and its "Cross-node" lines after the table.
#pragma once

namespace zm {

// Registers all of it (from register_module_zeropp).
void add_cross_node_figures();

}  // namespace zm
