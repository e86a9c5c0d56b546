"""The newest few of a long listing, kept as it streams by: a folder's files
(transcriber.watch.folder; an S3 prefix is listed in parts instead). The first
in listing order would be the same ones scan after scan, long taken, and a new file
past them never seen."""

from __future__ import annotations

import heapq
from typing import Generic, TypeVar

T = TypeVar("T")


class Newest(Generic[T]):
    """At most `most` items, the newest by (time, name); `cut` once one was let go."""

    def __init__(self, most: int) -> None:
        self.most = most
        self.cut = False
        self._heap: list[tuple[int, str, T]] = []

    def add(self, time_ns: int, name: str, item: T) -> None:
        if len(self._heap) < self.most:
            heapq.heappush(self._heap, (time_ns, name, item))
        else:
            self.cut = True
            heapq.heappushpop(self._heap, (time_ns, name, item))

    def oldest_first(self) -> tuple[T, ...]:
        return tuple(item for _, _, item in sorted(self._heap, key=lambda k: k[:2]))
