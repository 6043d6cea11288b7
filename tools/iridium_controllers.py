"""The Table 6.1 and 6.2 transfers simulated with each congestion controller.

    python tools/iridium_controllers.py [--cc bic,cubic]

Runs the transfers of `farlink reproduce zaghloul-table-6.1-sim` and `zaghloul-table-6.2-sim`
(the same presets, sizes and seeds 1-8) with `flows[0].tcp.cc` set to each controller named, and
prints the mean transfer time in minutes beside the field's: the controller columns of the table
in docs/far-links.md.
"""

from __future__ import annotations

import argparse

import numpy as np

from farlink.reproduce.far_links import TABLE_6_1, TABLE_6_2, TABLE_SEEDS, _transfer_times_min


def transfers() -> list[tuple[str, str, str, float]]:
    """(label, preset, size, measured minutes) of every field transfer of the two tables."""
    rows = [
        (f"8 modems, {size} MB", "iridium-greenland-8", f"{size}MB", float(measured))
        for size, (measured, _) in TABLE_6_1.items()
    ]
    rows += [
        (f"{n} modems, {size} MB", f"iridium-{n}", f"{size}MB", float(measured))
        for n, (size, measured, _) in TABLE_6_2.items()
    ]
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cc", default="bic,cubic", help="controllers, comma-separated")
    controllers = parser.parse_args().cc.split(",")
    print("transfer".ljust(22) + "measured" + "".join(f"{cc:>10}" for cc in controllers))
    for label, preset, size, measured in transfers():
        means = [
            np.mean(
                _transfer_times_min(preset, size, TABLE_SEEDS, sets=(f'flows[0].tcp.cc="{cc}"',))
            )
            for cc in controllers
        ]
        print(label.ljust(22) + f"{measured:8.0f}" + "".join(f"{m:10.1f}" for m in means))


if __name__ == "__main__":
    main()
