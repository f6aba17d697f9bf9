// The module's registration (core/modules.hpp): the watchdog's diagnosis of a collective that
// timed out (comm/watchdog.hpp WaitDiagnosis), from the ranks' progress slots: the ranks that
// have not reached it, those whose watchdog stopped beating, grouped by host where the job spans
// nodes.
#include <fmt/format.h>

#include <memory>
#include <string>
#include <vector>

#include "comm/watchdog.hpp"
#include "modules/rank_progress/progress_slots.hpp"

namespace zm {

namespace {

// A heartbeat older than this: the rank's process is stopped or hung as a whole.
constexpr int64_t kSilentAfterMs = 1500;

void append(std::string& list, const std::string& item) {
  list += (list.empty() ? "" : ", ") + item;
}

class SlotsDiagnosis final : public WaitDiagnosis {
 public:
  void create(int64_t posted) override { slots_.create(MPI_COMM_WORLD, posted); }
  void publish_posted(int64_t posted) override { slots_.publish_posted(posted); }
  void beat(int64_t now_ms) override { slots_.beat(now_ms); }
  void forget() override { slots_.forget(); }
  void release() override { slots_.release(); }
  std::string on_host(int r) const override {
    if (!slots_.ready() || !slots_.spans_nodes()) return "";
    return " on " + slots_.host(r);
  }
  std::string waited_for(int rank, int64_t sequence, int64_t now_ms, bool remote,
                         const std::string& last_words) override;

 private:
  // "2, 3 on node-b, 6 on node-c": ranks grouped by their host, in rank order.
  std::string ranks_by_host(const std::vector<int>& ranks) const;

  ProgressSlots slots_;
};

std::string SlotsDiagnosis::ranks_by_host(const std::vector<int>& ranks) const {
  std::string text;
  for (size_t i = 0; i < ranks.size(); ++i) {
    const std::string host = on_host(ranks[i]);
    append(text, std::to_string(ranks[i]));
    const bool last_of_host = i + 1 == ranks.size() || on_host(ranks[i + 1]) != host;
    if (last_of_host) text += host;
  }
  return text;
}

// Ranks that have not reached the collective, and ranks whose heartbeat stopped; what was checked
// when none is found. `remote`: read other nodes' counts too (MPI).
std::string SlotsDiagnosis::waited_for(int rank, int64_t sequence, int64_t now_ms, bool remote,
                                       const std::string& last_words) {
  if (!slots_.ready()) return "the ranks' progress is not published (watchdog not armed)";
  std::vector<int64_t> reached = slots_.node_posted();
  const std::vector<int64_t> beats = slots_.node_heartbeats();
  std::string missing, unknown;
  if (remote) slots_.read_remote_posted(reached, last_words.c_str());
  int checked = 0;
  std::vector<int> unread;
  for (int r = 0; r < slots_.size(); ++r) {
    const int64_t count = reached[static_cast<size_t>(r)];
    const int64_t beat = beats[static_cast<size_t>(r)];
    if (r == rank) continue;
    if (count < 0) {
      unread.push_back(r);
      continue;
    }
    ++checked;
    if (count < sequence)
      append(missing, fmt::format("{}{} (has not reached it)", r, on_host(r)));
    else if (beat >= 0 && now_ms - beat > kSilentAfterMs)
      append(missing, fmt::format("{}{} (not responding for {:.1f} s: stopped or hung)", r,
                                  on_host(r), static_cast<double>(now_ms - beat) * 1e-3));
  }
  unknown = ranks_by_host(unread);
  std::string text =
      !missing.empty() ? "ranks still missing: " + missing
                       : fmt::format(
                             "every other rank checked ({}) has reached it and is responding: the "
                             "operation itself is stuck (file system, network or MPI progress)",
                             checked);
  if (!unknown.empty()) text += "; ranks on other nodes, not readable from this thread: " + unknown;
  return text;
}

}  // namespace

void register_module_rank_progress() {
  set_wait_diagnosis([] { return std::make_unique<SlotsDiagnosis>(); });
}

}  // namespace zm
