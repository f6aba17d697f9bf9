"""What scripts/netns-cluster.sh computes in Python: a tc rate's burst, and the nodes' lines in
/etc/hosts. It runs them as root.

    python3 -m zeromini_tools.netns burst RATE       prints the tbf burst (bytes) of RATE
    python3 -m zeromini_tools.netns hosts MARK add PREFIX SUBNET N
                                                     SUBNET.I PREFIX-nodeI for I = 1..N in
                                                     /etc/hosts, each line ending in MARK, in
                                                     place of the lines that ended in MARK
    python3 -m zeromini_tools.netns hosts MARK remove
                                                     takes the lines that end in MARK out
"""

import re
import sys

HOSTS = "/etc/hosts"
# The bucket holds at least 4 ms at the rate, so that a timer tick does not cap the rate, and at
# least MIN_BURST_BYTES.
BURST_SECONDS = 0.004
MIN_BURST_BYTES = 16384
RATE_UNITS = {"": 1, "k": 1e3, "m": 1e6, "g": 1e9}


def burst_bytes(rate):
    """The tbf burst in bytes for a tc rate (bit, kbit, mbit, gbit); SystemExit for another."""
    m = re.fullmatch(r"([0-9.]+)([kmg]?)bit", rate.lower())
    if not m:
        sys.exit(f"netns-cluster: rate '{rate}': expected e.g. 1gbit, 500mbit, 800kbit")
    bits = float(m.group(1)) * RATE_UNITS[m.group(2)]
    return max(MIN_BURST_BYTES, int(bits / 8 * BURST_SECONDS))


def edit_hosts(path, mark, nodes=None):
    """Takes the lines ending in mark out of the hosts file at path; nodes (prefix, subnet, n)
    adds n marked lines, SUBNET.I PREFIX-nodeI."""
    with open(path, encoding="utf-8") as f:
        lines = [line for line in f.read().splitlines() if not line.endswith(mark)]
    if nodes:
        prefix, subnet, n = nodes
        lines += [f"{subnet}.{i} {prefix}-node{i}  {mark}" for i in range(1, n + 1)]
    # In place, not by rename: /etc/hosts may be a bind mount.
    with open(path, "r+", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
        f.truncate()


def main(argv):
    if argv[:1] == ["burst"] and len(argv) == 2:
        print(burst_bytes(argv[1]))
    elif argv[:1] == ["hosts"] and len(argv) == 6 and argv[2] == "add":
        edit_hosts(HOSTS, argv[1], (argv[3], argv[4], int(argv[5])))
    elif argv[:1] == ["hosts"] and len(argv) == 3 and argv[2] == "remove":
        edit_hosts(HOSTS, argv[1])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
