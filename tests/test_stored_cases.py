"""Today's answers stay today's answers: every stored case (tests/stored_cases.py: `explore` on
every preset and objective, `traffic` under the seed 000, dataflow and Peemen models,
`hierarchy` on every hierarchy file and the 3-level preset) prints the stored JSON document
again, number for number. These are the regression fixtures of the engine unification
(docs/architecture.md); each number in them is checked against an independent computation by
the other suites (executors, brute forces, the seeds' tables)."""

from __future__ import annotations

import json

import pytest
from stored_cases import HERE, cases, run

CASES = cases()


def test_every_case_is_stored_and_every_stored_file_is_a_case() -> None:
    assert sorted(p.stem for p in HERE.glob("*.json")) == sorted(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_case_prints_the_stored_document(name: str) -> None:
    stored = json.loads((HERE / f"{name}.json").read_text())
    again = json.loads(json.dumps(run(CASES[name]), sort_keys=True))
    assert again == stored, f"{name}: re-record with tests/stored_cases.py if this is meant"

