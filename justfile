# transcriber's tasks. `./dev <recipe>` runs them in the project's environment.

set positional-arguments

default:
    @just --list

# A recording in, a transcript out, on the embedded PostgreSQL
demo:
    transcriber transcribe samples/en.ogg --format srt

# The daemon: HTTP API, workers, systemd watchdog (flags: --http, --workers, --no-api)
serve *args:
    transcriber serve "$@"

# The test suite (benchmarks excluded); CI runs exactly this. Two workers (pytest-xdist),
# a whole test file to one (its tests in order, its module fixtures made once); each
# worker has its own PostgreSQL, temporary folder and warm recognizer; the files in the
# order collected, the longest first (tests/conftest.py's LONGEST_FIRST); the slowest
# tests are named at the end, where the ten minutes go. No test runs over five minutes
# (the longest takes about one): one that hangs fails with every thread's stack, its
# worker replaced, and the run goes on
test *args:
    pytest -q -n 2 --dist loadfile --no-loadscope-reorder --durations=25 --timeout 300 --timeout-method thread "$@"

# Every spec scenario has a test, and every test marker names a scenario
spec-check:
    pytest -q tests/test_spec_coverage.py

# The queue benchmark: transitions/s, claim and wake-up latency, claim plans
bench *args:
    transcriber bench "$@"

# Chaos suite (real worker processes, kills, a database restart)
chaos *args:
    pytest -q tests/chaos "$@"

# Return stopped records to work (journaled with origin human)
resume *ids:
    transcriber resume "$@"

# The journal, live: all records or one
tail *id:
    transcriber journal --follow "$@"

# Queue counts per milestone
status:
    transcriber status

# Records that stopped, with reason and error
stopped *args:
    transcriber stopped "$@"

# Static checks: lint and format, types, import contracts, module size, declared imports
# (docs/development.md)
lint:
    #!/usr/bin/env bash
    # Every tool runs, even after one fails; the recipe fails if any did.
    failed=()
    check() { echo "lint: $*"; "$@" || failed+=("${*:1:2}"); }
    check ruff check actors transcriber tests
    check ruff format --check actors transcriber tests
    check mypy
    check lint-imports
    # No module over 600 lines, the tests' included (tests/module_size.py).
    check python -m tests.module_size actors transcriber tests
    # The shipped code's imports against [project].dependencies (tests/ excluded) ...
    check deptry .
    # ... and the tests' against the dependencies and the dev extra together.
    check deptry tests --exclude '\.venv' --ignore DEP002,DEP004
    if [ ${#failed[@]} -gt 0 ]; then echo "lint: failed: ${failed[*]}" >&2; exit 1; fi

# Refresh the locks: every transitive version of `.[dev]` (requirements-dev.lock, what
# ./dev installs) and of the runtime alone (requirements.lock, what the wheel check installs),
# each with the hashes of every file of that version on the indexes pip is configured with.
# The locks name no index. `./dev lock --upgrade` moves unpinned transitive versions forward.
lock *args:
    pip-compile --quiet --generate-hashes --allow-unsafe --strip-extras --no-emit-index-url --no-emit-find-links --no-emit-trusted-host --extra dev -o requirements-dev.lock "$@" pyproject.toml
    pip-compile --quiet --generate-hashes --allow-unsafe --strip-extras --no-emit-index-url --no-emit-find-links --no-emit-trusted-host --constraint requirements-dev.lock -o requirements.lock pyproject.toml

# Mutation check of the queue: each small break of its SQL and code (tests/mutate.py)
# must fail the fast queue tests; fails naming any mutant that survives
mutate *names:
    python -m tests.mutate "$@"

# Chaos at scale (not in any test run): 1,000 records, 20+ SIGKILLs, workers frozen
# past their lease, a PostgreSQL restart, a poison recording, slow steps; args: DURATION RECORDS KILLS SEED
chaos-scale *args:
    python -m tests.chaos.scale "$@"
