"""The design-space example (examples/design_space.py) on its tiny grid: it runs a real Dask
sweep and writes a PNG figure and the rows as CSV."""

import csv
import os
import struct
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "design_space.py"


def png_size(path: Path) -> tuple[int, int]:
    with open(path, "rb") as file:
        header = file.read(24)
    assert header[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG file"
    assert header[12:16] == b"IHDR"
    width, height = struct.unpack(">II", header[16:24])
    return width, height


def test_the_example_sweeps_a_tiny_grid_and_draws_the_figure(tmp_path):
    figure = tmp_path / "design_space.png"
    rows = tmp_path / "rows.csv"
    env = dict(os.environ, RUST_BACKTRACE="0", MPLBACKEND="Agg")
    completed = subprocess.run(
        [sys.executable, str(EXAMPLE), "--tiny", "--out", str(figure), "--csv", str(rows)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert completed.returncode == 0, completed.stderr[-2000:]
    assert "rows from 4 points" in completed.stdout
    # Three panels side by side at 150 dpi: a wide figure, and far more than an empty PNG.
    width, height = png_size(figure)
    assert width > 2 * height > 500, (width, height)
    assert figure.stat().st_size > 20_000
    with open(rows, newline="") as file:
        table = list(csv.DictReader(file))
    # 2 merge policies x 2 budgets, three phases each.
    assert len(table) == 12
    assert {row["compaction"] for row in table} == {"leveling", "tiering"}
    assert {row["bits_per_key"] for row in table} == {"2", "6"}
    assert {row["phase"] for row in table} == {"fillrandom", "readrandom", "readmissing"}
    for row in table:
        assert float(row["ops_per_sec"]) > 0
        assert float(row["io_per_op_data"]) >= 0
