"""Run ``run_grid`` from a JSON config file in a fresh process (for the kill test and benchmark).

usage: python grid_driver.py CONFIG.json   (keys: the arguments of run_grid)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from canarykit.agents import run_grid


def main(path: str) -> int:
    cfg = json.loads(Path(path).read_text(encoding="utf-8"))
    summary = run_grid(
        cfg["models"], cfg["tasks_path"], cfg["pools"], cfg["seeds"], cfg["agent_cfg"],
        cfg["store_dir"], cfg["index_out"], cfg["summary_out"], progress=cfg.get("progress", True),
    )
    print(json.dumps({"executed": summary.executed, "reused": summary.reused}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
