"""The median step of a zeromini run's log (its `step N/M ... step T ms  K tok/s` lines).

    python3 -m zeromini_tools.step_log LOG WARMUP   prints the tokens/s of the median step among
                                                    those after the first WARMUP (empty: none)
"""

import re
import sys

STEP_LINE = re.compile(r"step +(\d+)/\d+ .* step +([0-9.]+) ms +([0-9,]+) tok/s")


def main(argv):
    log, warmup = argv[0], int(argv[1])
    rows = []
    with open(log, errors="replace") as f:
        for line in f:
            m = STEP_LINE.search(line)
            if m and int(m.group(1)) > warmup:
                rows.append((float(m.group(2)), int(m.group(3).replace(",", ""))))
    # The upper middle of an even count, as the PyTorch reference takes it.
    rows.sort()
    print(rows[len(rows) // 2][1] if rows else "")


if __name__ == "__main__":
    main(sys.argv[1:])
