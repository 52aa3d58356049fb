"""A home file with several problems names every one of them, on one line (issue #13)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from twin.home import Home
from twin.schema import UserFileError

REPO = Path(__file__).resolve().parents[2]
BAD = """\
name: bad
rooms:
  - id: kitchen
    devices:
      - {id: lamp, type: no_such_type}
      - {id: fan, type: fan, speed: 3}
"""


def test_both_problems_are_named(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(BAD)
    with pytest.raises(UserFileError) as caught:
        Home.load(path)
    text = str(caught.value)
    assert "rooms[0].devices[0].type: unknown device type 'no_such_type'" in text
    assert "rooms[0].devices[1].speed: Extra inputs are not permitted" in text
    assert "more problem" not in text and "\n" not in text
    proc = subprocess.run([sys.executable, "-m", "matter_twin.cli", "codes", "--home", str(path)],
                          capture_output=True, text=True, cwd=REPO, timeout=60)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert "devices[0].type" in proc.stderr and "devices[1].speed" in proc.stderr
