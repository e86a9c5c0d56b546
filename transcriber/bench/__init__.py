"""The benchmarks: the queue, recognition, the API."""
