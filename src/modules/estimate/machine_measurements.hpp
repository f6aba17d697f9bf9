// What other modules measure of this machine at start-up for the estimate, beside the figures
// measure_machine.hpp takes: a module whose part of a run the planner prices from a machine
// table of its own (the module zero_infinity's [nvme]) adds its measurement from its folder
// with_estimate/, so that a run without --machine is priced too.
#pragma once

#include <functional>
#include <string>

#include "core/deck.hpp"
#include "plan/machine.hpp"

namespace zm {

class Communicator;

// Sets the keys of `machine` the module's pricing reads, where the deck asks for its part
// (collective over `comm`: every rank calls it), and returns the words the estimate's line adds
// about them ("" where it measured nothing).
using MachineMeasurement =
    std::function<std::string(const Deck& deck, Communicator& comm, Machine& machine)>;
void add_machine_measurement(MachineMeasurement measurement);

}  // namespace zm
