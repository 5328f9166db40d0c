"""Fuzz the read path with hostile and mutated reference files, faults, replaced sources and
credential probes; print a table of what went wrong, per class of cases.

    uv run python tools/fuzz_references.py --cases 20000            # everything
    uv run python tools/fuzz_references.py --cases 600 --no-network  # local classes only
    uv run python tools/fuzz_references.py --replay 1234 --seed 1    # one mutated case again
    uv run python tools/fuzz_references.py --no-local --replaced 8   # network classes only

Columns: cases tried; crashes (a worker process killed by a signal); hangs (no answer within
the timeout); untyped (an exception outside ``shadowzarr_spec.errors``); wrong/filled (values
that differ from the sources' where they must not: arrays a mutation did not touch, reads under
faults or after a source was replaced, arrays that must be refused); bad cache rows (LocalCache
rows whose bytes differ from the source's); leaks (a planted secret in an error, stderr, a cache
or a request to another origin; "Task was destroyed"-like output; tasks left running); over
memory (Python heap past the case's budget); others refused (an array a mutation did not touch
that failed to read; under faults that retries overcome, any array that failed to read; for a
replaced source, an error other than `SourceChangedError`); injected requests (requests the
hostile server got for paths the case never referenced, or heads carrying a header no client of
ours sends: an ETag's CR/LF let through). The exit status is 1 when any
column but ``cases`` is not zero, else 2 for a run stopped before its end (SIGINT or SIGTERM:
it prints the table of the cases run so far). The figures of the long run are in
``tools/fuzz/RESULTS.md``.

The machine is shared: run it with ``nice``. Cases run in child processes (``--workers``).
"""

from __future__ import annotations

import argparse
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fuzz.cases import mutated_cases, remove_case
from fuzz.corpus import build_corpus
from fuzz.hostile import hostile_cases
from fuzz.runner import Pool, Tally, run_sequential


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=2000, help="mutated reference files")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds a case may take")
    parser.add_argument("--faults-per-kind", type=int, default=4)
    parser.add_argument("--replaced", type=int, default=16)
    parser.add_argument("--no-network", action="store_true", help="skip nginx and the proxy")
    parser.add_argument(
        "--no-local", action="store_true", help="only the network classes (no hostile, mutated)"
    )
    parser.add_argument(
        "--lying-server",
        action="store_true",
        help="also a proxy sending other bytes under the Content-Range asked for (undetectable "
        "for uncompressed chunks by any client; reported in its own row)",
    )
    parser.add_argument("--replay", type=int, help="run only mutated case number REPLAY")
    parser.add_argument("--work", type=Path, help="folder for the cases (default: a temp one)")
    arguments = parser.parse_args()
    work = arguments.work or Path(tempfile.mkdtemp(prefix="shadowzarr-fuzz-"))
    work.mkdir(parents=True, exist_ok=True)
    tally = Tally()
    started = time.perf_counter()
    log = work / "workers.log"
    signal.signal(signal.SIGTERM, _interrupt)
    stopped = False
    try:
        if not arguments.no_local:
            run_local(arguments, work, tally, log)
        if not arguments.no_network and arguments.replay is None:
            run_network(arguments, work, tally, log)
    except KeyboardInterrupt:  # SIGINT or SIGTERM: report the cases run so far
        stopped = True
    finally:
        if arguments.work is None:
            shutil.rmtree(work, ignore_errors=True)
    print(tally.table())
    for column, examples in tally.examples.items():
        print(f"\n{column}:")
        for example in examples:
            print(f"  {example[:400]}")
    print(f"\n{time.perf_counter() - started:.0f} s, seed {arguments.seed}")
    if stopped:
        cases = sum(row["cases"] for row in tally.rows.values())
        print(f"stopped before its end, after {cases} cases")
        return 1 if tally.failures() else 2
    return 1 if tally.failures() else 0


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def run_local(arguments: argparse.Namespace, work: Path, tally: Tally, log: Path) -> None:
    corpus = build_corpus(work / "corpus")

    def cases():  # type: ignore[no-untyped-def]
        if arguments.replay is None:
            for number, case in enumerate(hostile_cases(work / "hostile")):
                case["id"] = f"h{number}"
                yield "hostile", case
        for cls, case in mutated_cases(corpus, work / "mutated", arguments.cases, arguments.seed):
            if arguments.replay is None or case["id"] == arguments.replay:
                yield cls, case
            else:
                remove_case(case)

    classes: dict[str, str] = {}

    def tagged():  # type: ignore[no-untyped-def]
        for cls, case in cases():
            classes[str(case["id"])] = cls
            yield case

    pool = Pool(arguments.workers, arguments.timeout, log)
    for done, (case, result) in enumerate(pool.run(tagged()), start=1):
        tally.add_result(classes.pop(str(case["id"])), case, result)
        remove_case(case)
        if done % 500 == 0:
            print(f"... {done} cases", file=sys.stderr, flush=True)
        if done % 2000 == 0:  # the table so far: a run stopped early still reports what it saw
            print(f"after {done} cases:\n{tally.table()}", file=sys.stderr, flush=True)
            for column, examples in tally.examples.items():
                print(f"  {column}: {examples[0][:400]}", file=sys.stderr, flush=True)


def run_network(arguments: argparse.Namespace, work: Path, tally: Tally, log: Path) -> None:
    from fuzz.hostile_network import HostileServer, hostile_network_cases
    from fuzz.network import (
        Network,
        credential_cases,
        fault_cases,
        proxy_leaks,
        replaced_cases,
    )

    network = Network(work / "network")
    hostile = HostileServer()
    try:
        for generator in (
            fault_cases(
                network, arguments.faults_per_kind, arguments.seed, lying=arguments.lying_server
            ),
            replaced_cases(network, arguments.replaced, arguments.seed),
            credential_cases(network),
            hostile_network_cases(hostile, work / "hostile-network"),
        ):
            for cls, case, result in run_sequential(generator, arguments.timeout, log):
                if case.get("check_proxy_secret"):
                    result.setdefault("leaks", []).extend(proxy_leaks(network))
                if case.get("check_injected"):
                    result["injected"] = hostile.injected(case["check_injected"])
                tally.add_result(cls, case, result)
    finally:
        hostile.close()
        network.close()


if __name__ == "__main__":
    sys.exit(main())
