"""environment.kind bfcl without bfcl-eval installed (CI's default suite runs before the slow
suite installs it): one line naming the key and how to install it, no traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# the CLI with bfcl-eval unimportable, whether or not this machine has it
WITHOUT_BFCL = "import sys; sys.modules['bfcl_eval'] = None; from canarykit.cli import main; sys.exit(main(sys.argv[1:]))"


#: the line of the profile that sets environment.kind (the error names it)
KIND_LINE = next(i for i, text in enumerate((ROOT / "src/canarykit/resources/profiles/bfcl.yaml").read_text().splitlines(), 1)
                 if text.strip().startswith("kind:"))


def test_the_bfcl_profile_without_bfcl_eval_says_how_to_install_it() -> None:
    proc = subprocess.run([sys.executable, "-c", WITHOUT_BFCL, "validate-config", "params.yaml", "--configfile",
                           "src/canarykit/resources/profiles/bfcl.yaml"], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip() == (
        f"canarykit: error: src/canarykit/resources/profiles/bfcl.yaml:{KIND_LINE}: environment.kind: bfcl needs the bfcl-eval package, "
        "which is not installed: install it with `make install-bfcl` (bfcl-eval, pinned, without its heavy dependencies)")
