"""The watching in every `serve`: each scan period, every watch of an owner not revoked
is scanned — its folder listed, its whole files taken (at most `watch_files_per_scan`
read a scan), and the transcripts of its records that are done written beside them.

A folder that cannot be read is said on its watch (`watch list`) and in the log, and the
scan goes on with the next; nothing of one watch stops another's."""

from __future__ import annotations

import logging
import os
import socket
import uuid
from collections.abc import Callable
from functools import partial
from pathlib import Path

import attrs
import trio

from actors.log import event
from transcriber.config import Config
from transcriber.db.database import Database
from transcriber.milestones import TRANSCRIBED
from transcriber.storage.blobs import Blobs
from transcriber.watch import outputs
from transcriber.watch.folder import FolderUnreadable, Listing, Observations
from transcriber.watch.places import FolderPlace, Place
from transcriber.watch.s3 import S3Place, is_s3
from transcriber.watch.taking import CLAIM_S, FileChanged, Watch, take, too_large
from transcriber.watch.writing import KEPT, TOO_LONG

OPEN_PER_SCAN = 100
"""Takes of one watch whose record is looked at in one scan (the rest the next)."""


def scanner_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


@attrs.define
class Watcher:
    """One process's watching: what its scans saw of each folder (in memory), and the
    database's word on what is taken."""

    db: Database
    blobs: Blobs
    config: Config
    clock: Callable[[], float] = trio.current_time
    folders: dict[int, Observations] = attrs.field(factory=dict)

    async def scan(self) -> None:
        """One scan of every watch. Cancellation: between files; a file being taken is
        let go (see transcriber.watch.taking.take)."""
        rows = await self.db.fetch("watches_to_scan")
        watches = [Watch(r["id"], r["owner_id"], r["folder"], tuple(r["formats"])) for r in rows]
        self.folders = {w.id: self.folders.get(w.id) or self.observations() for w in watches}
        budget = [self.config.watch_files_per_scan]
        for w in watches:
            try:
                await self.scan_watch(w, budget)
            except Exception as e:  # one watch's trouble is not another's
                event(logging.ERROR, "watch_scan_failed", watch=w.id, error=repr(e))

    def observations(self) -> Observations:
        return Observations(self.config.watch_quiet_s)

    def place(self, where: str) -> Place:
        """Where a watch (or one of its takes) looks: a folder, or an S3 prefix with the
        store's client (FolderUnreadable when the store is not S3, or is that prefix)."""
        return S3Place.of(where, self.blobs) if is_s3(where) else FolderPlace(Path(where))

    async def scan_watch(self, w: Watch, budget: list[int]) -> None:
        try:
            place = self.place(w.folder)
            listing = await place.listing(self.folders[w.id].after)
        except FolderUnreadable as e:
            await self.db.execute("watch_scanned", w.id, scanner_name(), e.reason)
            event(logging.WARNING, "watch_unreadable", watch=w.id, reason=e.reason)
            return
        await self.db.execute("watch_scanned", w.id, scanner_name(), None)
        await self.take_whole(w, place, listing, budget)
        await self.write_done(w)
        await place.tidy(listing)

    async def take_whole(self, w: Watch, place: Place, listing: Listing, budget: list[int]) -> None:
        seen = self.folders[w.id]
        seen.update(listing, self.clock())
        if listing.cut:
            event(logging.WARNING, "watch_folder_cut", watch=w.id, listed=len(listing.media))
        taken = {
            (r["name"], r["size_bytes"], r["mtime_ns"])
            for r in await self.db.fetch("watch_taken_files", w.id)
        }
        seen.let_go(lambda e: (e.name, e.size, e.mtime_ns) in taken)
        notes: dict[str, bool] = {}  # this scan's answers: a note asked for once
        for s in seen.quiet(self.clock()):
            e = s.entry
            if e.size == 0:
                seen.forget(e.name)  # empty: a copy not begun, seen anew when it grows
                continue
            try:
                if await self.refused_before(place, listing, e.name, notes):
                    seen.forget(e.name)  # its note says why; asked again when seen again
                    continue
            except OSError as err:  # not known: not tried blind, the next scan asks again
                event(logging.WARNING, "watch_file_unreadable", watch=w.id, error=str(err))
                continue
            if budget[0] <= 0:
                return  # the next scan goes on
            if (big := too_large(self.config, e)) is not None:
                if not await self.refused(w, e.name, big.message):
                    s.rest_until = self.clock() + CLAIM_S
                notes.pop(outputs.stem(e.name) + outputs.REFUSED_SUFFIX, None)
                continue
            budget[0] -= 1
            try:
                if s.sha256 is None:
                    s.sha256 = await place.content_hash(e)
                got = await take(
                    self.db, self.blobs, self.config, w, e, s.sha256, partial(place.read, e)
                )
            except FileChanged:
                s.sha256 = None
                seen.restart(e.name, self.clock())
                event(logging.INFO, "watch_file_changed", watch=w.id, file=e.name)
                continue
            except OSError as err:  # gone or unreadable while read: the next scan says
                s.sha256 = None
                event(logging.WARNING, "watch_file_unreadable", watch=w.id, error=str(err))
                continue
            except Exception as err:  # one file's trouble is not its watch's: the other
                # files are taken and the transcripts written; it is tried at the next scan
                s.sha256 = None
                event(logging.ERROR, "watch_file_failed", watch=w.id, error=repr(err))
                continue
            if got.outcome == "refused":
                if not await self.refused(w, e.name, str(got.message)):
                    s.rest_until = self.clock() + CLAIM_S
                notes.pop(outputs.stem(e.name) + outputs.REFUSED_SUFFIX, None)
            elif got.outcome == "already":
                s.rest_until = self.clock() + CLAIM_S
            elif got.outcome == "later":
                event(logging.WARNING, "watch_take_later", watch=w.id, message=got.message)
                s.rest_until = self.clock() + float(got.retry_after or 60)

    async def refused_before(
        self, place: Place, listing: Listing, name: str, notes: dict[str, bool]
    ) -> bool:
        """Whether STEM.refused.txt lies beside `name`, a file the listing showed (so in
        the range it covers). The note's name may sort outside that range — `a.mp3` <
        `a.png` < `a.refused.txt` with a part of an S3 prefix ending at `a.png` — where
        the listing's silence says nothing: then its key is asked for, one HEAD. Few
        are: a file inside with its note outside means an edge of the range lies
        between them, so that edge's name starts with `STEM.`; a scan asks at most as
        many as its two edge names hold dots, as each answer is kept in `notes` for the
        scan (`a.mp3`, `a.MP3`, `a.ogg` … share one note; one refused drops its
        answer, its note maybe written since). Taking a file only once its note's name
        falls in the same listing would starve the file whose note always falls in the
        next one (a prefix that does not change is parted at the same keys each round);
        trying it anyway would read it again, and again be refused, each round."""
        note = outputs.stem(name) + outputs.REFUSED_SUFFIX
        if listing.covers(note):
            return note in listing.names
        if note not in notes:
            notes[note] = await place.has(note)
        return notes[note]

    async def refused(self, w: Watch, name: str, message: str) -> bool:
        """The intake's refusal written beside the file as STEM.refused.txt: while it is
        there the file is not tried again (removing it asks for another try). False when
        no note could be written."""
        event(logging.WARNING, "watch_refused", watch=w.id, message=message)
        note = outputs.refused_note(message)
        return await self.note(w, name, outputs.REFUSED_SUFFIX, note) not in (None, KEPT, TOO_LONG)

    async def note(self, w: Watch, name: str, suffix: str, data: bytes) -> str | None:
        """`data` beside file `name` as STEM+suffix, never over another file; None when
        the folder could not be written (logged)."""
        try:
            how = await self.place(w.folder).write_new(name, suffix, data)
        except (OSError, FolderUnreadable) as e:
            event(logging.WARNING, "watch_write_failed", watch=w.id, error=str(e))
            return None
        if how == KEPT:
            event(logging.WARNING, "watch_name_kept", watch=w.id, file=outputs.stem(name) + suffix)
        elif how == TOO_LONG:
            event(
                logging.WARNING, "watch_name_too_long", watch=w.id, file=outputs.stem(name) + suffix
            )
        return how

    async def write_done(self, w: Watch) -> None:
        """The transcripts of the watch's records that are done, beside their files; a
        note beside those stopped. Cancellation: between writes (each is whole or not
        there; a killed one is written again, or found the same)."""
        for t in await self.db.fetch("watch_open_takes", w.id, OPEN_PER_SCAN):
            sha, rid = bytes(t["content_sha256"]), t["recording_id"]
            if not t["found"]:
                await self.db.execute("watch_written", w.owner_id, sha, "record deleted")
                continue
            if t["milestone"] == TRANSCRIBED:
                outcome = await self.write_formats(w, t["folder"], t["name"], rid)
                if outcome is not None:
                    await self.db.execute("watch_written", w.owner_id, sha, outcome)
                continue
            reason = t["stop_reason"]
            if reason is not None and reason != t["noted_stop"]:
                note = outputs.stopped_note(reason, rid)
                w_at = Watch(w.id, w.owner_id, t["folder"], w.formats)
                if await self.note(w_at, t["name"], outputs.STOPPED_SUFFIX, note) is not None:
                    await self.db.execute("watch_noted_stop", w.owner_id, sha, reason)

    async def write_formats(self, w: Watch, folder: str, name: str, rid: uuid.UUID) -> str | None:
        """Each format of the record beside `name`; what became of each (`srt written,
        txt kept`), or None to try again at the next scan (the folder not writable)."""
        said = []
        for fmt in w.formats:
            data = await outputs.rendered(self.db, w.owner_id, rid, fmt)
            if data is None:
                return "record deleted"
            how = await self.note(Watch(w.id, w.owner_id, folder, w.formats), name, f".{fmt}", data)
            if how is None:
                return None
            said.append(f"{fmt} {how}")
        return ", ".join(said)


async def keep_watching(
    db: Database,
    blobs: Blobs,
    config: Config,
    *,
    task_status: trio.TaskStatus[Watcher] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Scan every `watch_scan_s` until cancelled (0: this daemon watches nothing). A scan
    that fails (the database away) is logged and the next one comes.

    Cancellation: the only way out; a scan in flight is cut between files (a file being
    taken is let go, its claim released or left to run out)."""
    watcher = Watcher(db, blobs, config)
    task_status.started(watcher)
    if config.watch_scan_s <= 0:
        return
    while True:
        try:
            await watcher.scan()
        except Exception as e:
            event(logging.WARNING, "watch_scan_missed", error=str(e))
        await trio.sleep(config.watch_scan_s)
