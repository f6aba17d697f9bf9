// The module's registration (core/modules.hpp): a reader of the checkpoint a run resumes from
// (io/checkpoint.hpp) that warns of what the run changes against the one that wrote it.
#include "core/log.hpp"
#include "io/checkpoint.hpp"
#include "io/h5.hpp"
#include "modules/resume_check/resume_changes.hpp"

namespace zm {

namespace {

// Compares with the deck and rank count the checkpoint was written with (its attributes; a
// checkpoint without them is not compared). Rank 0 prints the warnings.
void warn_about_changes(hid_t file, const std::string& path, const Deck& deck, int64_t ranks) {
  if (!h5::has_attr(file, "deck") || !h5::has_attr(file, "ranks")) return;
  const Deck written = parse_deck(h5::read_attr_string(file, "deck"),
                                  path + " (the deck it was written with)", {}, BuildChecks::Skip);
  for (const std::string& change :
       resume_changes(written, h5::read_attr_int(file, "ranks"), deck, ranks))
    log_root("warning: resuming from {}: {}\n", path, change);
}

}  // namespace

void register_module_resume_check() {
  add_checkpoint_reader(warn_about_changes);
}

}  // namespace zm
