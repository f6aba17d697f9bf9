"""Sends a signal to one thread other than the main thread of every zeromini rank whose command
line names MARKER (e.g. its output directory): the signal lands on a Kokkos/OpenMP worker where
the rank runs several threads. Prints what it signalled; exit 1 if it found no rank.

    python3 signal_threads.py TERM MARKER
"""
import ctypes
import os
import signal
import sys


def rank_processes(marker):
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/comm") as f:
                name = f.read().strip()
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                command = f.read().decode(errors="replace")
        except OSError:
            continue
        if name == "zeromini" and marker in command:
            yield int(pid)


def main(signal_name, marker):
    number = getattr(signal, f"SIG{signal_name}")
    libc = ctypes.CDLL(None, use_errno=True)
    found = 0
    for pid in rank_processes(marker):
        threads = sorted(int(t) for t in os.listdir(f"/proc/{pid}/task"))
        others = [t for t in threads if t != pid]
        target = others[-1] if others else pid
        if libc.tgkill(pid, target, number) != 0:
            print(f"tgkill({pid}, {target}): errno {ctypes.get_errno()}")
            return 1
        where = "a thread other than main" if others else "the main thread (the only one)"
        print(f"rank process {pid}: SIG{signal_name} to thread {target}, {where}, "
              f"of {len(threads)} threads")
        found += 1
    return 0 if found else 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
