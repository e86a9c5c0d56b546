"""Reading an HTTP upload's body into the intake's sink (transcriber.intake): a form or
the audio itself, streamed as it arrives, refused as soon as it passes its bound, and what
the client said about it (title, language, filename, recognition options) checked. The
intake stores, bounds and commits it."""

from __future__ import annotations

import email.message
from collections.abc import AsyncIterable, Callable, Mapping

from python_multipart.exceptions import MultipartParseError
from python_multipart.multipart import MultipartParser, parse_options_header

from transcriber.intake import Described, Sink, TooLarge
from transcriber.intake.sink import clean_filename as clean_filename  # openai.requests' too
from transcriber.languages import language_hint
from transcriber.options import ALIGN_TEXT_MAX, RecognitionOptions, parse_vocabulary
from transcriber.records.owner_text import check_text as check_text  # openai.requests' too

FORM_SLACK = 1 << 20
"""What a multipart body may carry besides the file (boundaries, headers, the text
fields) before the whole body counts as too large."""

TEXT_FIELD_MAX = 4096
"""Bytes of one text form field (title, language, prompt, …)."""
FORM_PARTS_MAX = 64
"""Parts of a form besides its file, ignored ones included: OpenAI's clients send at
most about twenty (a few `timestamp_granularities[]`, `include[]` and the fields)."""
FORM_TEXT_MAX = 64 * 1024
"""Bytes of all the text fields a form keeps together: the longest valid ones (a 1000
character prompt, a 500 character title) take under 8 KiB even at four bytes each."""

TITLE_MAX = 500
PROMPT_MAX = 1000
"""Characters of a recognition prompt: Whisper reads only the last 224 tokens of it."""
LONG_FIELDS = {"text": (ALIGN_TEXT_MAX * 4, 1)}
"""The text to align has its own bound, in bytes (four a character at most), beside the
form's other fields: one value."""


class UploadRefused(Exception):
    """The upload cannot be accepted; `status` is the HTTP answer. Nothing is kept."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


# --- values the client sends --------------------------------------------------------


def clean_title(value: str | None) -> str | None:
    return None if value is None else check_text(value, "title", TITLE_MAX)


def clean_language(value: str | None) -> str | None:
    """A language hint is one of the recognizer's codes (en, ru, haw), empty or `auto`
    to detect it (`transcriber.languages.language_hint`); anything else would only fail
    later, at every recognition attempt, so it is refused here (ValueError naming it)."""
    return language_hint(value)


def recognition_options(
    task: str | None,
    prompt: str | None,
    speakers: str | None = None,
    vocabulary: str | None = None,
    text: str | None = None,
) -> RecognitionOptions:
    """The recognition options of an upload's `task`, `prompt`, `speakers`, `vocabulary`
    (terms separated by commas or new lines) and `text` (the owner's, for task `align`)
    fields; 422 for a task no recognizer has, a prompt or text that cannot be stored,
    speakers that are not off, auto, a count or a range, a vocabulary past its bounds."""
    try:
        if prompt:
            check_text(prompt, "prompt", PROMPT_MAX, lines=True)
        if text:
            text = check_text(text, "text", ALIGN_TEXT_MAX, lines=True)
        return RecognitionOptions(
            task=task or "transcribe",
            prompt=prompt or None,
            speakers=speakers or None,
            vocabulary=parse_vocabulary(vocabulary),
            text=text or None,
        )
    except ValueError as e:  # BadOptions is one
        raise UploadRefused(422, str(e)) from None


def _refuse_invalid(fn: Callable[[str | None], str | None], value: str | None) -> str | None:
    try:
        return fn(value)
    except ValueError as e:
        raise UploadRefused(422, str(e)) from None


def disposition_filename(header: str | None) -> str | None:
    """The filename of a Content-Disposition header, RFC 2231 `filename*` included."""
    if not header:
        return None
    msg = email.message.Message()
    msg["content-disposition"] = header
    try:
        return msg.get_filename()
    except (ValueError, LookupError):
        return None


# --- reading the request body -----------------------------------------------------------


async def receive_raw(chunks: AsyncIterable[bytes], into: Sink) -> None:
    """The body itself is the audio; the sink refuses it as soon as it passes its limit
    (TooLarge)."""
    async for chunk in chunks:
        await into.write(chunk)


class _Form:
    """A streaming multipart/form-data body: python-multipart calls these methods while
    it parses a chunk; the file's bytes are collected in `pending` and written out by
    `receive_form` between chunks, so no more than a chunk is ever held."""

    TEXT_FIELDS = frozenset(
        {"title", "language", "task", "prompt", "speakers", "vocabulary", "text"}
    )

    def __init__(
        self,
        boundary: bytes,
        text_fields: frozenset[str] = TEXT_FIELDS,
        ignored: frozenset[str] = frozenset(),
        long_fields: Mapping[str, tuple[int, int]] | None = None,
    ):
        """`text_fields`: the names a part other than the file may have. One ending in
        `[]` may be given more than once (a list, as OpenAI's clients send arrays); its
        values are in `lists`, the others in `fields`. The parts named in `ignored` are
        taken and thrown away as they are read: nothing of them is kept. The parts are
        at most `FORM_PARTS_MAX` (64), the text kept at most `FORM_TEXT_MAX` bytes in
        all (413). A list field of `long_fields` has its own bounds instead, (bytes of one
        value, values at most) — audio clips as data URLs: over them, 413 and 400."""
        self.text_fields = text_fields
        self.long_fields = dict(long_fields or {})
        self.ignored = ignored
        self.parts = 0
        self.text_bytes = 0
        self._dropping = False
        self.lists: dict[str, list[str]] = {}
        self.parser = MultipartParser(
            boundary,
            callbacks={
                "on_part_begin": self._part_begin,
                "on_header_field": self._header_field,
                "on_header_value": self._header_value,
                "on_header_end": self._header_end,
                "on_headers_finished": self._headers_finished,
                "on_part_data": self._part_data,
                "on_part_end": self._part_end,
                "on_end": self._end,
            },
            max_header_count=16,
            max_header_size=8192,
        )
        self.fields: dict[str, str] = {}
        self.filename: str | None = None
        self.has_file = False
        self.ended = False
        self.pending: list[bytes] = []
        self._name: str | None = None
        self._in_file = False
        self._headers: dict[bytes, bytes] = {}
        self._field = bytearray()
        self._value = bytearray()
        self._text = bytearray()

    def feed(self, chunk: bytes) -> list[bytes]:
        """Parse `chunk`; returns the file's bytes found in it."""
        try:
            self.parser.write(chunk)
        except MultipartParseError as e:
            raise UploadRefused(400, f"malformed multipart body: {e}") from None
        out, self.pending = self.pending, []
        return out

    def _part_begin(self) -> None:
        self._headers, self._name, self._in_file = {}, None, False
        self._dropping = False
        self._text = bytearray()

    def _header_field(self, data: bytes, start: int, end: int) -> None:
        self._field += data[start:end]

    def _header_value(self, data: bytes, start: int, end: int) -> None:
        self._value += data[start:end]

    def _header_end(self) -> None:
        self._headers[bytes(self._field).strip().lower()] = bytes(self._value).strip()
        self._field, self._value = bytearray(), bytearray()

    def _headers_finished(self) -> None:
        kind, params = parse_options_header(self._headers.get(b"content-disposition"))
        name = params.get(b"name")
        if kind != b"form-data" or name is None:
            raise UploadRefused(400, "malformed multipart body: a part without a form-data name")
        self._name = _decode_header(name)
        if self._name == "file":
            if self.has_file:
                raise UploadRefused(422, "more than one file in the form; send one")
            self.has_file = self._in_file = True
            raw = params.get(b"filename")
            self.filename = None if raw is None else _decode_header(raw)
        elif self._name in self.text_fields:
            self.parts += 1
            if self.parts > FORM_PARTS_MAX:
                raise UploadRefused(
                    400, f"the form has more than {FORM_PARTS_MAX} fields besides its file"
                )
            self._dropping = self._name in self.ignored
            if self._name in self.long_fields:
                count = self.long_fields[self._name][1]
                if len(self.lists.get(self._name, [])) >= count:
                    raise UploadRefused(
                        400, f"form field {self._name!r} has more than {count} values"
                    )
            if self._name in self.fields:
                raise UploadRefused(422, f"form field {self._name!r} given twice")
        else:
            names = ["file", *sorted(self.text_fields)]
            raise UploadRefused(
                422,
                f"unexpected form field {self._name!r}; "
                f"send {', '.join(names[:-1])} and {names[-1]}",
            )

    def _part_data(self, data: bytes, start: int, end: int) -> None:
        if self._in_file:
            self.pending.append(data[start:end])
            return
        if self._dropping:
            return
        self._text += data[start:end]
        if self._name in self.long_fields:
            most = self.long_fields[self._name][0]
            if len(self._text) > most:
                raise UploadRefused(
                    413, f"a value of form field {self._name!r} is longer than {most} bytes"
                )
            return
        if len(self._text) > TEXT_FIELD_MAX:
            raise UploadRefused(
                422, f"form field {self._name!r} is longer than {TEXT_FIELD_MAX} bytes"
            )
        self.text_bytes += end - start
        if self.text_bytes > FORM_TEXT_MAX:
            raise UploadRefused(
                413, f"the form's text fields are longer than {FORM_TEXT_MAX} bytes in all"
            )

    def _part_end(self) -> None:
        if self._in_file or self._name is None or self._dropping:
            return
        try:
            value = self._text.decode("utf-8")
        except UnicodeDecodeError:
            raise UploadRefused(422, f"form field {self._name!r} is not UTF-8") from None
        if self._name.endswith("[]"):
            self.lists.setdefault(self._name, []).append(value)
        else:
            self.fields[self._name] = value

    def _end(self) -> None:
        self.ended = True


def _decode_header(raw: bytes) -> str:
    # Browsers send names as raw UTF-8 inside the quoted string.
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


async def receive_form(
    chunks: AsyncIterable[bytes],
    content_type: str,
    into: Sink,
    limit: int,
    text_fields: frozenset[str] = _Form.TEXT_FIELDS,
    ignored: frozenset[str] = frozenset(),
    long_fields: Mapping[str, tuple[int, int]] | None = None,
) -> _Form:
    """A multipart/form-data body with one `file` part and optional text fields of
    these names (by default those of `POST /v1/recordings`), those in `ignored` taken
    but not kept, those in `long_fields` within their own bounds (`_Form`). The file is
    refused as soon as it passes `limit`: the body by this function, the file by the sink
    (TooLarge)."""
    _, params = parse_options_header(content_type)
    boundary = params.get(b"boundary")
    if not boundary or len(boundary) > 200:
        raise UploadRefused(400, "multipart body without a usable boundary")
    form = _Form(boundary, text_fields, ignored, long_fields)
    slack = FORM_SLACK + sum(most * count for most, count in (long_fields or {}).values())
    received = 0
    async for chunk in chunks:
        received += len(chunk)
        if received > limit + slack:
            raise TooLarge(f"the upload is larger than {limit} bytes")
        for data in form.feed(chunk):
            await into.write(data)
    if not form.ended:
        raise UploadRefused(400, "malformed multipart body: it ended before its last boundary")
    if not form.has_file:
        raise UploadRefused(422, "the form has no 'file' field")
    return form


def is_form(content_type: str) -> bool:
    return parse_options_header(content_type)[0] == b"multipart/form-data"


def is_audio(content_type: str) -> bool:
    kind = parse_options_header(content_type)[0]
    return kind.startswith(b"audio/") or kind == b"application/octet-stream"


async def receive(
    chunks: AsyncIterable[bytes],
    *,
    content_type: str,
    content_length: str | None,
    disposition: str | None,
    into: Sink,
    limit: int,
    title: str | None,
    language: str | None,
    filename: str | None,
    task: str | None = None,
    prompt: str | None = None,
    speakers: str | None = None,
    vocabulary: str | None = None,
) -> Described:
    """Read a whole upload — a form or a raw audio body — into `into`; what it is.

    `title`, `language`, `filename`, `task`, `prompt`, `speakers` and `vocabulary` come
    from the query; a form's own fields win (and only a form has the `text` to align).
    Raises TooLarge as soon as it is larger than `limit`, UploadRefused: 400 empty or
    malformed, 415 neither a form nor audio, 422 a field is invalid.
    """
    declared = _content_length(content_length)
    text = None  # only a form carries it: a raw body's fields are in the query
    if is_form(content_type):
        if declared is not None and declared > limit + FORM_SLACK + LONG_FIELDS["text"][0]:
            raise TooLarge(f"the upload is larger than {limit} bytes")
        form = await receive_form(chunks, content_type, into, limit, long_fields=LONG_FIELDS)
        title = form.fields.get("title", title)
        language = form.fields.get("language", language)
        task = form.fields.get("task", task)
        prompt = form.fields.get("prompt", prompt)
        speakers = form.fields.get("speakers", speakers)
        vocabulary = form.fields.get("vocabulary", vocabulary)
        text = form.fields.get("text")
        filename = form.filename if form.filename is not None else filename
    elif is_audio(content_type):
        if declared is not None and declared > limit:
            raise TooLarge(f"the upload is larger than {limit} bytes")
        # A raw body's fields are all in the query: a hint no recognizer takes is
        # refused before a byte is read.
        _refuse_invalid(clean_language, language)
        await receive_raw(chunks, into)
        filename = filename if filename is not None else disposition_filename(disposition)
    else:
        raise UploadRefused(
            415,
            "send multipart/form-data with a 'file' field, or the audio "
            "itself as audio/* or application/octet-stream",
        )
    if into.size == 0:
        raise UploadRefused(400, "the upload is empty")
    return Described(
        clean_filename(filename),
        _refuse_invalid(clean_title, title),
        _refuse_invalid(clean_language, language),
        recognition_options(task, prompt, speakers, vocabulary, text),
    )


def _content_length(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        return None
