"""The planner's predictions (the CSVs of `zeromini plan ... --format csv`, given as --planned
[MODEL=]CSV) and their join with measured figures: the differences, how many agree to the byte,
and the CSV that lists them side by side."""

import csv

TO_THE_BYTE = 0.5  # |measured - planned| below it: the same whole number of bytes


def planned_files(specs, models, who):
    """(model, path) of each --planned [MODEL=]CSV argument (MODEL optional with one model)."""
    for spec in specs or []:
        model, sep, path = spec.partition("=")
        if not sep:
            if len(models) != 1:
                raise SystemExit(f"{who}: --planned {spec}: the data has {len(models)} models "
                                 f"({', '.join(models)}); write --planned MODEL={spec}")
            model, path = models[0], spec
        if model not in models:
            raise SystemExit(f"{who}: --planned {spec}: no model {model!r} in the data "
                             f"(models: {', '.join(models)})")
        yield model, path


def read_planned(specs, models, who, need, complaint):
    """[(model, row)] of every row of the --planned CSVs; a CSV without a column of `need` ends
    the program with complaint(path, missing columns)."""
    rows = []
    for model, path in planned_files(specs, models, who):
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            missing = set(need) - set(reader.fieldnames or [])
            if missing:
                raise SystemExit(complaint(path, missing))
            rows += [(model, row) for row in reader]
    return rows


class Agreement:
    """Measured figures set against planned ones: how many were compared, how many agree to the
    byte and the largest |measured - planned|."""

    def __init__(self):
        self.compared, self.equal, self.largest = 0, 0, 0.0

    def difference(self, measured, planned):
        """measured - planned, counted; None (and not counted) when either is missing."""
        if measured is None or planned is None:
            return None
        diff = measured - planned
        self.compared += 1
        self.equal += abs(diff) < TO_THE_BYTE
        self.largest = max(self.largest, abs(diff))
        return diff


def cell(value):
    """A CSV cell: whole numbers without ".0", other floats in full (repr), None empty."""
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    return "" if value is None else value


def write_csv(rows, columns, path):
    """The measured-against-planned rows as a CSV of `columns`; path."""
    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns, lineterminator="\n")
        writer.writeheader()
        for row in rows:
            writer.writerow({c: cell(row[c]) for c in columns})
    return path
