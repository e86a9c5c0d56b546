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

# The test suite (benchmarks excluded); CI runs exactly this
test *args:
    pytest -q "$@"

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

# Static checks
lint:
    python -m compileall -q actors transcriber tests
