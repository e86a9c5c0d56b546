"""The API's pydantic shapes: its answers (for the OpenAPI document) and its bodies (an
edit, a speaker's name, a new share link)."""

import datetime as dt
import uuid
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from transcriber.http.owned_cards import SUMMARY_MAX, TOPIC_MAX, TOPICS_MAX
from transcriber.http.share_links import MAX_DAYS
from transcriber.http.uploads import TITLE_MAX
from transcriber.options import VOCABULARY_TERM_MAX, VOCABULARY_TERMS_MAX
from transcriber.records.corrections import CORRECTION_MAX
from transcriber.records.owner_text import check_text
from transcriber.records.shares import NOTE_MAX
from transcriber.records.speaker_names import NAME_MAX


class Links(BaseModel):
    model_config = ConfigDict(populate_by_name=True)
    text: str
    srt: str
    vtt: str
    json_url: str = Field(alias="json")
    markdown: str
    docx: str


class Stopped(BaseModel):
    at: dt.datetime
    reason: str = Field(description="a code: empty_file, undecodable_audio, too_long, …")
    message: str = Field(description="the reason in plain words")


class CardSpeakers(BaseModel):
    asked: str | None = Field(
        description="the record's speakers option (off, auto, N, A-B); null: the service's"
    )
    found: int | None = Field(description="speakers told apart; null: not diarized (yet)")


class Card(BaseModel):
    """What an owner reads about one recording. A stop shows here, as a flag with its
    reason, beside the milestone the record reached."""

    id: uuid.UUID
    title: str | None
    summary: str | None
    topics: list[str]
    filename: str | None
    size_bytes: int | None
    created_at: dt.datetime
    milestone: Literal["live", "received", "normalized", "recognized", "transcribed"] = Field(
        description="`live`: a live session still running (its audio being kept); it"
        " enters the pipeline at `received` when the session ends"
    )
    milestone_entered_at: dt.datetime
    done: bool
    state: Literal[
        "live", "queued", "normalizing", "transcribing", "finding_speakers", "done", "stopped"
    ] = Field(
        description="where the record is: a live session running, waiting in the queue,"
        " a step at work on it"
        " (normalizing, transcribing, finding_speakers), done, or stopped"
    )
    queue_ahead: int | None = Field(
        description="while queued: how many records the workers take before this one"
        " (anyone's; a count only); null in any other state"
    )
    readable: bool = Field(
        description="the transcript is there to read (from `recognized` on, even while who "
        "spoke is still being found or that stopped)"
    )
    speakers: CardSpeakers
    task: Literal["transcribe", "translate", "align"] = Field(
        description="transcribe, translate, or align (the owner's text timed to the speech)"
    )
    vocabulary: list[str] | None = Field(
        description="the names and terms the recognizer was told (the upload's `vocabulary`);"
        " null: the service's default, if any"
    )
    progress: float | None = Field(
        description="the fraction (0-1) of the step at work that is done, as the step last"
        " reported it; null while queued, done or stopped, and before the step's first"
        " report (a recording under 30 s is recognized in one piece: it may go from no"
        " report to done)"
    )
    duration_s: float | None
    language: str | None
    stopped: Stopped | None
    from_settings: list[Literal["language", "speakers", "vocabulary"]] = Field(
        default=[],
        description="which of the record's options came from the owner's defaults"
        " (/v1/settings) because the upload did not say",
    )
    links: Links
    live_text: str | None = Field(
        default=None,
        description="a live session's draft: the completed turns' text as they came,"
        " while the session runs and until the transcript is readable; null otherwise",
    )


class CardPage(BaseModel):
    items: list[Card]
    next_cursor: str | None = Field(
        description="pass as `cursor` for the next page; null on the last page"
    )


class Event(BaseModel):
    id: int = Field(
        description="the event's number in this record's journal: 1, 2, …; it never"
        " changes, and no event is numbered behind one already answered"
    )
    at: dt.datetime
    origin: Literal["pipeline", "human"]
    kind: str
    milestone: str | None
    detail: dict[str, Any]


class EventPage(BaseModel):
    events: list[Event]
    next_after: int | None = Field(
        description="pass as `after` for the next page; null when there is no more (a"
        " client that follows the record asks again after its last event's `id`: it gets"
        " each event once)"
    )


class Segment(BaseModel):
    model_config = ConfigDict(extra="allow")
    start: float
    end: float
    text: str


class Transcript(BaseModel):
    model_config = ConfigDict(extra="allow")
    id: uuid.UUID
    language: str | None
    model: str | None
    duration_s: float | None
    text: str
    segments: list[Segment]


class Health(BaseModel):
    status: Literal["ok", "unavailable"]
    error: str | None = None
    recognizer: dict[str, str] | None = None
    """What recognizes here: model, decoding, device, compute type."""


def _valid(what: str, max_chars: int, *, lines: bool = False) -> AfterValidator:
    return AfterValidator(lambda v: check_text(v, what, max_chars, lines=lines))


Topic = Annotated[str, Field(min_length=1), _valid("a topic", TOPIC_MAX)]


LEFT_OUT: Any = None
"""The value of an edit's field the client left out. Only a default: the field's type
refuses a `null` the client sends."""


class Edit(BaseModel):
    """The owner's fields; any other field is refused. A field left out is unchanged;
    send an empty string or list to clear one."""

    model_config = ConfigDict(extra="forbid")
    title: Annotated[str, _valid("title", TITLE_MAX)] = Field(default=LEFT_OUT)
    summary: Annotated[str, _valid("summary", SUMMARY_MAX, lines=True)] = Field(default=LEFT_OUT)
    topics: Annotated[list[Topic], Field(max_length=TOPICS_MAX)] = Field(default=LEFT_OUT)


class Again(BaseModel):
    """What a new attempt changes; a field left out stays as the recording had it."""

    model_config = ConfigDict(extra="forbid")
    language: Annotated[str | None, Field(max_length=20)] = Field(
        default=None,
        description="one of the recognizer's codes (docs/api.md, Languages); "
        "empty or auto to detect it",
    )
    speakers: Annotated[
        str | None, Field(max_length=5, pattern="^(|off|auto|[0-9]{1,2}(-[0-9]{1,2})?)$")
    ] = Field(
        default=None,
        description="off, auto, a count (2) or a range (2-4); empty: the service's default",
    )
    task: Literal["transcribe", "translate"] | None = None


class SpeakerName(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: Annotated[str | None, Field(max_length=4 * NAME_MAX)] = Field(
        description="the speaker's name; empty or null: back to the label diarization gave"
    )


class SegmentText(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: Annotated[str | None, Field(max_length=4 * CORRECTION_MAX)] = Field(
        description=(
            f"the owner's text of the segment, one line of at most {CORRECTION_MAX} "
            "characters; empty or null: back to the recognizer's"
        )
    )


class CorrectedSegment(BaseModel):
    segment: int
    text: str = Field(description="the text now shown and exported")
    machine_text: str = Field(description="the recognizer's text, kept as it was")
    corrected: bool


class SegmentSpeaker(BaseModel):
    model_config = ConfigDict(extra="forbid")
    speaker: Annotated[str | None, Field(max_length=4 * NAME_MAX)] = Field(
        description="the speaker's label (Speaker 2) or name; null: the one diarization found"
    )


class NewShare(BaseModel):
    """A new link: a note (who it is for), and how many days it lasts (none: until
    revoked)."""

    model_config = ConfigDict(extra="forbid")
    note: str = Field(default="", max_length=NOTE_MAX)
    expires_in_days: float | None = Field(default=None, gt=0, le=MAX_DAYS)


class OwnerSettings(BaseModel):
    """The owner's defaults: what an upload that does not say uses."""

    language: str | None = Field(description="the language of uploads that name none; null: detect")
    speakers: str | None = Field(
        description="who spoke, for uploads that do not say: off, auto, N or A-B; null: the"
        " service's"
    )
    vocabulary: list[str] = Field(description="words and names the recognizer should expect")
    subtitle_profile: str | None = Field(
        description="the profile of SRT and VTT downloads that name none; null: the service's"
    )
    remember_voices: bool = Field(
        description="whether voices are remembered: kept of diarized records, matched against"
        " the owner's library (/v1/voices) and found speakers named after them (default off)"
    )
    updated_at: dt.datetime | None


class SettingsChange(BaseModel):
    """Any of the settings; a field left out stays, null clears it."""

    model_config = ConfigDict(extra="forbid")
    language: Annotated[str | None, Field(max_length=20)] = Field(default=LEFT_OUT)
    speakers: Annotated[str | None, Field(max_length=20)] = Field(default=LEFT_OUT)
    vocabulary: Annotated[
        list[Annotated[str, Field(max_length=4 * VOCABULARY_TERM_MAX)]] | None,
        Field(max_length=VOCABULARY_TERMS_MAX),
    ] = Field(default=LEFT_OUT)
    subtitle_profile: Annotated[str | None, Field(max_length=40)] = Field(default=LEFT_OUT)
    remember_voices: bool = Field(default=LEFT_OUT)


class Voice(BaseModel):
    """A voice of the owner's library: its name and what it is made of, never its vector."""

    id: uuid.UUID
    name: str
    seconds: float = Field(description="seconds of speech its vector is the mean of")
    recordings: int = Field(description="recordings it was taken from")
    created_at: dt.datetime
    updated_at: dt.datetime
    named: int | None = Field(default=None, description="speakers it names now")


class NewVoice(BaseModel):
    """A found speaker of one of the owner's diarized records kept as a voice: a new one,
    or added to the voice of that name, or to `voice` when given."""

    model_config = ConfigDict(extra="forbid")
    name: Annotated[str, Field(min_length=1, max_length=4 * NAME_MAX)]
    recording: uuid.UUID
    speaker: Annotated[str, Field(min_length=1, max_length=4 * NAME_MAX)] = Field(
        description="the speaker's label (Speaker 2) or name in that record"
    )
    voice: uuid.UUID | None = Field(default=None, description="add to this voice")


class VoiceChange(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: Annotated[str, Field(min_length=1, max_length=4 * NAME_MAX)]


class Voices(BaseModel):
    voices: list[Voice]
