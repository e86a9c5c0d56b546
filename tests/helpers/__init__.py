"""What the tests share that is not a fixture (fixtures live in the conftest.py files):
one module per kind of thing, imported by test modules; no test module imports another."""
