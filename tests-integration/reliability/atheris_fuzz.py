"""Coverage-guided fuzzing of the reference parser and the gen evaluator with atheris.

Not part of the pytest run (atheris is not in the workspace lock). Run it from a throwaway venv:

    uv venv /tmp/atheris-venv && uv pip install -p /tmp/atheris-venv/bin/python atheris
    PYTHONPATH=<workspace site-packages and package src dirs> \\
        /tmp/atheris-venv/bin/python tests-integration/reliability/atheris_fuzz.py -runs=200000

Any exception other than a `ShadowzarrError` is a crash (atheris stops and prints the input).
"""

from __future__ import annotations

import sys

import atheris

with atheris.instrument_imports():
    from shadowzarr_spec import ShadowzarrError, rfs_from_json
    from shadowzarr_spec.gen_expr import compile_expression
    from shadowzarr_spec.json_text import parse_json


def one_input(data: bytes) -> None:
    provider = atheris.FuzzedDataProvider(data)
    choice = provider.ConsumeIntInRange(0, 1)
    text = provider.ConsumeUnicodeNoSurrogates(400)
    try:
        if choice == 0:
            rfs = rfs_from_json(parse_json(text))
            for entry in rfs.gen:
                entry.lookup("a/c/0")
        else:
            compile_expression(text)({"i": provider.ConsumeInt(8), "j": 3})
    except ShadowzarrError:
        pass


if __name__ == "__main__":
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()
