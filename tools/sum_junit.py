"""Add up the JUnit reports of the per-package pytest runs into one closing line."""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from pathlib import Path


def main(folder: str) -> int:
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for report in sorted(Path(folder).glob("*.xml")):
        root = ET.parse(report).getroot()
        suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
        for suite in suites:
            for key in totals:
                totals[key] += int(suite.get(key, 0))
    failed = totals["failures"] + totals["errors"]
    passed = totals["tests"] - failed - totals["skipped"]
    line = f"total: {passed} passed, {failed} failed"
    if totals["skipped"]:
        line += f", {totals['skipped']} skipped"
    print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
