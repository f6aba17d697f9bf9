"""Configurations measured in alternating rounds: every round runs each configuration once, one
after the other, so that a slow spell of the machine hits them alike. The reports give the median
of each over the rounds, the ratio of two configurations and that ratio in every round, as
markdown tables."""

import statistics


def ratio_of_medians(first, second):
    """median(first) / median(second) of two configurations' figures, one per round."""
    return statistics.median(first) / statistics.median(second)


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
