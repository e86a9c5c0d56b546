"""What a scan sees of a watched folder, and when a file there is whole: the media
files at its top level (never in subfolders, never hidden ones), each with its size and
modification time, and the files whose size and time stayed the same across two scans a
quiet period apart (an S3 prefix's listings show a part of it each: what lies outside
is kept as last seen, transcriber.watch.s3). Nothing here writes to the folder; every
function that touches it blocks (the scan runs it in a thread)."""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable
from pathlib import Path

import attrs

from transcriber.storage.newest import Newest

AUDIO_SUFFIXES = frozenset(
    {"aac", "aif", "aiff", "amr", "caf", "flac", "m4a", "mka", "mp2", "mp3", "mpga", "oga"}
    | {"ogg", "opus", "wav", "weba", "wma", "wv"}
)
VIDEO_SUFFIXES = frozenset(
    {"3gp", "avi", "flv", "m4v", "mkv", "mov", "mp4", "mpeg", "mpg", "mts", "ogv", "ts"}
    | {"webm", "wmv"}
)
MEDIA_SUFFIXES = AUDIO_SUFFIXES | VIDEO_SUFFIXES
"""What a watch takes: the suffixes of the audio and video files the decoder reads. A
transcript written beside one (.srt, .txt …) is never one of them."""

MAX_LISTED = 10_000
"""Media files one scan looks at in one folder, the newest: past it the older wait (and
the scan says so), so a folder of millions of files costs a bounded scan. An S3
prefix's listing stops before the one past them, and the next scan goes on from there
(transcriber.watch.s3.MAX_PAGES)."""

MAX_REMEMBERED = 10 * MAX_LISTED
"""Files one watch keeps in memory between scans (about 400 bytes each: 40 MB). A prefix
listed in parts keeps what it saw outside the part listed (taken, refused and empty
files are let go): past this, those outside that had their turn (quiet, not taken:
resting) are forgotten first, the ones known longest first, then files newly listed
are not remembered. A file waiting for its second sighting is kept until it has it, so
the files remembered are each offered within a round and a quiet period, and make room
for the others: a file not remembered is seen anew at a later listing and waits one
more quiet period, never lost (tests/integration/test_watch_s3_attack.py)."""

HASH_CHUNK = 1 << 20


class FolderUnreadable(Exception):
    """The folder cannot be listed: `reason` in one line for `watch list`."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


@attrs.frozen
class Entry:
    """A media file as one scan saw it."""

    name: str
    size: int
    mtime_ns: int
    inode: int
    tag: str = ""
    """An object's ETag (transcriber.watch.s3); "" for a file."""

    @property
    def stamp(self) -> tuple[int, int]:
        return (self.size, self.mtime_ns)


@attrs.frozen
class Listing:
    """What one scan listed: a folder whole, or a part of an S3 prefix — the names after
    `after` up to and including `through` (transcriber.watch.s3)."""

    media: tuple[Entry, ...]
    names: frozenset[str]
    """Every name in the range listed (the notes beside the media files among them)."""
    cut: bool = False
    """More media files than MAX_LISTED: the rest were not looked at."""
    after: str | None = None
    """The range starts after this name (None: at the first)."""
    through: str | None = None
    """The range ends at this name, included (None: at the last)."""

    def covers(self, name: str) -> bool:
        """Whether `name` lies in the range listed: if it is there, the listing saw it."""
        return (self.after is None or name > self.after) and (
            self.through is None or name <= self.through
        )


def storable(name: str) -> bool:
    """Whether PostgreSQL's text can hold `name` (a take keeps it): not with NUL (an S3
    key may hold one) nor with bytes that are not UTF-8 (a Linux file name may: Python
    reads them as lone surrogates)."""
    if "\x00" in name:
        return False
    try:
        name.encode()
    except UnicodeEncodeError:
        return False
    return True


def is_media(name: str) -> bool:
    if name.startswith("."):
        return False  # hidden: a copier's part file, ours (see transcriber.watch.writing)
    if not storable(name):
        return False  # never looked at: its take could not be kept
    suffix = name.rpartition(".")[2].lower() if "." in name else ""
    return suffix in MEDIA_SUFFIXES


def list_folder(folder: Path) -> Listing:
    """The folder's media files (regular files, links not followed) and every name in it.
    FolderUnreadable when it cannot be listed: not there, not a folder, no permission.
    Blocking."""
    media: Newest[Entry] = Newest(MAX_LISTED)
    names: set[str] = set()
    try:
        with os.scandir(folder) as entries:
            for e in entries:
                names.add(e.name)
                if not is_media(e.name):
                    continue
                try:
                    st = e.stat(follow_symlinks=False)
                except OSError:
                    continue  # gone between the listing and its stat: not there
                if not stat.S_ISREG(st.st_mode):
                    continue
                media.add(
                    st.st_mtime_ns, e.name, Entry(e.name, st.st_size, st.st_mtime_ns, st.st_ino)
                )
    except OSError as e:
        raise FolderUnreadable(f"{e.strerror or type(e).__name__}: {folder}") from None
    return Listing(media.oldest_first(), frozenset(names), media.cut)


def stamp_of(path: Path) -> tuple[int, int] | None:
    """The file's (size, mtime_ns) now, None when it is gone. Blocking."""
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns)


class NotTheFile(OSError):
    """The name no longer opens the regular file the scan listed (replaced by a link,
    a folder or another file since)."""


def open_listed(path: Path, entry: Entry) -> int:
    """A read-only descriptor of the file the scan listed as `entry`, never through a
    symbolic link (one put in its place since the listing could point anywhere the
    daemon may read: another owner's uploads). NotTheFile otherwise. Blocking."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_ino != entry.inode:
        os.close(fd)
        raise NotTheFile(f"{path} changed since it was listed")
    return fd


def content_hash(path: Path, entry: Entry) -> bytes:
    """The sha256 of the file listed as `entry`. Blocking (hashlib lets other threads
    run while it hashes)."""
    digest = hashlib.sha256()
    with open(open_listed(path, entry), "rb") as f:
        while chunk := f.read(HASH_CHUNK):
            digest.update(chunk)
    return digest.digest()


@attrs.define
class Seen:
    """One file as the scans of this process saw it: since when (the process's clock)
    it has had this size and time, over how many scans, and its hash once read."""

    entry: Entry
    since: float
    scans: int = 1
    sha256: bytes | None = None
    rest_until: float = 0.0
    """Found taken by its hash (another name, a claim of another daemon), or refused
    without a note: not tried again before then (a claim may run out meanwhile)."""


@attrs.define
class Observations:
    """The files of one folder as this process's scans saw them. Kept in memory only:
    what it decides is only *when* a file is whole; *whether* it was taken is the
    database's (transcriber.watch.taking). A restart starts over, so a file waits one
    more quiet period."""

    quiet_s: float
    seen: dict[str, Seen] = attrs.field(factory=dict)
    listed: tuple[str, ...] = ()
    """The media files the last listing showed, in its order."""
    after: str | None = None
    """Where the next listing goes on: after the last name this one reached (an S3
    prefix listed a part a scan); None: from the first."""

    def update(self, listing: Listing, now: float) -> None:
        """This scan's listing at `now`: a file that changed starts its quiet period
        again; a file in the range the listing covers that it no longer shows is
        forgotten. One outside that range (a prefix listed in parts) is kept as it was
        last seen: the listing says nothing of it, and forgetting it would start its
        quiet period over at each of its sightings, which are scans apart."""
        current: dict[str, Seen] = {}
        new: list[Seen] = []
        for entry in listing.media:
            before = self.seen.get(entry.name)
            if before is None:
                new.append(Seen(entry, now))
            elif (before.entry.stamp, before.entry.tag) != (entry.stamp, entry.tag):
                current[entry.name] = Seen(entry, now)
            else:
                before.scans += 1
                before.entry = entry  # an inode may change by a rename over it
                current[entry.name] = before
        kept = {n: s for n, s in self.seen.items() if not listing.covers(n) and n not in current}
        if (excess := len(kept) + len(current) + len(new) - MAX_REMEMBERED) > 0:
            # Past the bound, those outside that had their turn go first (seen twice a
            # quiet period apart, not taken: resting), the ones known longest first;
            # then files seen now for the first time are not remembered (seen anew at
            # their next listing). One waiting for its second sighting is never
            # forgotten: forgetting those known longest would forget every file of a
            # prefix of more than MAX_REMEMBERED media objects before its second
            # sighting, each round.
            had_turn = [
                n for n, s in kept.items() if s.scans >= 2 and now - s.since >= self.quiet_s
            ]
            for name in sorted(had_turn, key=lambda n: kept[n].since)[:excess]:
                del kept[name]
            new = new[: max(0, MAX_REMEMBERED - len(kept) - len(current))]
        current |= {s.entry.name: s for s in new}
        self.seen = kept | current
        self.listed = tuple(e.name for e in listing.media if e.name in current)
        self.after = listing.through

    def quiet(self, now: float) -> list[Seen]:
        """The files the last listing showed unchanged since a sighting at least
        `quiet_s` before, not resting. Only those: one outside that listing's range
        was last seen scans ago and may have changed since — the rule is two sightings
        a quiet period apart, the second now."""
        return [
            s
            for s in (self.seen[n] for n in self.listed)
            if s.scans >= 2 and now - s.since >= self.quiet_s and now >= s.rest_until
        ]

    def let_go(self, taken: Callable[[Entry], bool]) -> None:
        """Forget the files `taken` says were taken: nothing is left to decide of them.
        A prefix listed in parts keeps what it saw outside the part listed, so only
        what may still be taken stays in memory between its sightings."""
        self.seen = {n: s for n, s in self.seen.items() if not taken(s.entry)}
        self.listed = tuple(n for n in self.listed if n in self.seen)

    def forget(self, name: str) -> None:
        """Nothing to remember of `name` until it is listed again (empty, or refused)."""
        self.seen.pop(name, None)
        self.listed = tuple(n for n in self.listed if n != name)

    def restart(self, name: str, now: float) -> None:
        """`name` changed while it was read: its quiet period starts again."""
        if name in self.seen:
            self.seen[name].since = now
            self.seen[name].scans = 1
