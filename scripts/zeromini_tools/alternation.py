"""Configurations measured in alternating rounds: every round runs each configuration once, one
after the other, so that a slow spell of the machine hits them alike. Running it makes the rounds;
the reports give the median of each configuration over the rounds, the ratio of two
configurations and that ratio in every round, as markdown tables.

    python3 -m zeromini_tools.alternation --rounds N --dir WORK [--suffix S] [--keep-stderr]
        [--announce NAME] --label LABEL -- COMMAND... [--label LABEL -- COMMAND...]...

Each round runs the commands in the order given, each once: run LABEL-R (R = 1..N) writes its
stdout and stderr to WORK/LABEL-R.log, or with --keep-stderr its stdout alone to WORK/LABEL-R.S
(--suffix, default .log). "{run}" in a command stands for WORK/LABEL-R, the run's own output
directory. --announce prints "NAME: round R/N: LABEL" to stderr before each run. The first run
that fails ends the rounds: the last 20 lines of its log go to stderr and the exit status is the
run's (128 + the signal's number for one killed by a signal, as a shell gives). A command cannot
hold the word --label.
"""

import argparse
import os
import statistics
import subprocess
import sys

RUN = "{run}"
FAILED_LOG_LINES = 20


def run_rounds(commands, rounds, work, suffix=".log", keep_stderr=False, announce=None):
    """Runs each (label, command) of commands once per round, in order, for rounds 1..rounds; the
    exit status of the first run that fails, 0 when none does."""
    for r in range(1, rounds + 1):
        for label, command in commands:
            run = os.path.join(work, f"{label}-{r}")
            if announce:
                print(f"{announce}: round {r}/{rounds}: {label}", file=sys.stderr, flush=True)
            output = run + suffix
            with open(output, "wb") as out:
                try:
                    status = subprocess.run([word.replace(RUN, run) for word in command],
                                            stdout=out,
                                            stderr=None if keep_stderr else subprocess.STDOUT,
                                            check=False).returncode
                except FileNotFoundError:  # no such program: a shell's "command not found"
                    print(f"alternation: {command[0]}: command not found", file=sys.stderr)
                    return 127
            if status != 0:
                if not keep_stderr:
                    write_tail(output, FAILED_LOG_LINES)
                return status if status > 0 else 128 - status
    return 0


def write_tail(path, count):
    """The last count lines of the file at path to stderr, as tail -n count prints them."""
    with open(path, "rb") as f:
        data = f.read()
    start = len(data) - 1 if data.endswith(b"\n") else len(data)
    for _ in range(count):
        start = data.rfind(b"\n", 0, start)
        if start < 0:
            break
    sys.stderr.flush()
    sys.stderr.buffer.write(data[start + 1:])
    sys.stderr.flush()


def ratio_of_medians(first, second):
    """median(first) / median(second) of two configurations' figures, one per round."""
    return statistics.median(first) / statistics.median(second)


def median_of_ratios(first, second):
    """The median over the rounds of first / second within each round."""
    return statistics.median(per_round(first, second))


def per_round(first, second):
    """first / second within each round."""
    return [a / b for a, b in zip(first, second)]


def joined(values, template):
    """The values formatted by template ("{:.2f}"), comma-separated."""
    return ", ".join(template.format(v) for v in values)


def table_head(columns):
    """The two head lines of a markdown table; columns: (name, "l" or "r" for the alignment)."""
    return ["| " + " | ".join(name for name, _ in columns) + " |",
            "|" + "|".join("---:" if align == "r" else "---" for _, align in columns) + "|"]


def table_row(cells):
    """One line of a markdown table."""
    return "| " + " | ".join(str(c) for c in cells) + " |"


def labelled_commands(words):
    """[(label, command)] of "--label LABEL -- COMMAND..." repeated; SystemExit when malformed."""
    commands = []
    while words:
        if len(words) < 4 or words[0] != "--label" or words[2] != "--":
            raise SystemExit(f"alternation: expected --label LABEL -- COMMAND..., not {words[:3]}")
        end = words.index("--label", 3) if "--label" in words[3:] else len(words)
        commands.append((words[1], words[3:end]))
        words = words[end:]
    return commands


def main(argv):
    first_label = argv.index("--label") if "--label" in argv else len(argv)
    parser = argparse.ArgumentParser(prog="python3 -m zeromini_tools.alternation",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, required=True)
    parser.add_argument("--dir", required=True, help="where the runs' outputs go")
    parser.add_argument("--suffix", default=".log", help="of the file a run's output goes to")
    parser.add_argument("--keep-stderr", action="store_true",
                        help="the runs' stderr stays this program's; only stdout goes to the file")
    parser.add_argument("--announce", help="NAME: prints NAME: round R/N: LABEL before each run")
    args = parser.parse_args(argv[:first_label])
    commands = labelled_commands(argv[first_label:])
    if not commands:
        parser.error("no --label LABEL -- COMMAND...")
    try:
        return run_rounds(commands, args.rounds, args.dir, args.suffix, args.keep_stderr,
                          args.announce)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
