"""Every conformance scenario through the Python API (tests/conformance/scenarios and the
directories of $CONTENOX_SCENARIOS), one test per scenario, named after it."""

from __future__ import annotations

from pathlib import Path

import pytest
from conformance_runner import check_scenario, scenario_files

FILES = scenario_files()


def test_scenarios_found() -> None:
    assert FILES, "no conformance scenario found"


@pytest.mark.parametrize("path", FILES, ids=[f.stem for f in FILES])
async def test_scenario(path: Path) -> None:
    await check_scenario(path)
