"""matplotlib set up for writing files, and what the figures of the plot*.py modes share: panels,
colours, byte units, error bars (the min-max spread of repeats around their median) and how a
figure is saved."""

import sys

STAGE_COLORS = {0: "#1f77b4", 1: "#ff7f0e", 2: "#2ca02c", 3: "#d62728"}


def pyplot(who="plot"):
    """matplotlib.pyplot on the Agg backend (files only, no display); exit 2 without matplotlib."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        return plt
    except ImportError:
        print(f"{who}: needs matplotlib: run with /usr/bin/python3 on Debian "
              "(apt-get install python3-matplotlib) or pip install matplotlib", file=sys.stderr)
        raise SystemExit(2)


def panels(plt, n, title, height=4.2):
    """A figure of n panels side by side under one title; (figure, axes)."""
    fig, axes = plt.subplots(1, n, figsize=(max(5.5, 5.2 * n), height), squeeze=False)
    fig.suptitle(title, fontsize=11)
    return fig, axes[0]


def save(plt, fig, path, dpi=120, **layout):
    """Lays the figure out (tight_layout(**layout)), writes it to path and closes it; path."""
    fig.tight_layout(**layout)
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    return path


def byte_unit(max_bytes):
    """(unit, bytes per unit) to show figures up to max_bytes in: GiB, MiB, KiB or bytes."""
    for unit, scale in (("GiB", 1024 ** 3), ("MiB", 1024 ** 2), ("KiB", 1024)):
        if max_bytes >= scale:
            return unit, scale
    return "bytes", 1


def error_bars(points):
    """The medians of stats() points (median, min, max, n) and, for errorbar(), the distances
    from each median down to the min and up to the max; None for those when every n is 1."""
    medians = [p[0] for p in points]
    if all(p[3] <= 1 for p in points):
        return medians, None
    return medians, [[p[0] - p[1] for p in points], [p[2] - p[0] for p in points]]
