"""Folders the service watches for an owner: each new audio or video file there, once it
stops growing, becomes a record of the owner through the one intake (`via: watch`) —
once per owner and content, whatever renames, restarts and daemons sharing the folder —
and its transcript is written beside it when the record is done (or a note saying why
not). The operator adds and removes watches (`transcriber watch`); every `serve` scans
them (transcriber.watch.scanning). The folder's own files are only read.

    folder.py    what a scan sees, and when a file is whole (in memory)
    taking.py    a whole file claimed in the database and made a record
    outputs.py   the transcript's bytes (the API's) and the notes, and their names
    writing.py   writing beside a file: whole or not at all, never over another file
    scanning.py  the periodic scan in `serve`
    watches.py   the operator's add, list and remove"""
