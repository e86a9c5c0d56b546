"""The document exports (capability `archive`): DOCX read back with python-docx, the
Markdown, and the page's print view, from a transcript with speakers, a pause and an
owner's correction."""

from __future__ import annotations

import datetime as dt
import io
import uuid

import docx
import httpx
import pytest

from tests.helpers.api_clients import uploaded
from tests.helpers.pages import signed_in, transcribed_with_audio
from transcriber.config import Config
from transcriber.db.database import Database
from transcriber.http.rendering import STATIC
from transcriber.owners import NewOwner
from transcriber.records.corrections import set_correction

SPOKEN = [
    {"start": 0.0, "end": 2.0, "text": "Welcome to the board.", "speaker": "Ann"},
    {"start": 2.0, "end": 4.0, "text": "Thank you.", "speaker": "Ann"},
    {"start": 4.2, "end": 6.0, "text": "Numbers are up.", "speaker": "Ben"},
    {"start": 65.0, "end": 67.0, "text": "After a long pause.", "speaker": "Ben"},
]


@pytest.mark.scenario(
    "archive",
    "The transcript is exported as DOCX and Markdown with corrections, timecodes and speakers",
)
async def test_docx_and_markdown_exports(
    db: Database, config: Config, base_url: str, ann: NewOwner, as_ann: httpx.AsyncClient
) -> None:
    card = await uploaded(as_ann, title="Board meeting")
    rid = card["id"]
    await transcribed_with_audio(db, config, SPOKEN, " ".join(s["text"] for s in SPOKEN))
    await set_correction(db, ann.id, uuid.UUID(rid), 2, "Revenue is up.", {"by": "owner"})
    links = (await as_ann.get(f"/v1/recordings/{rid}")).json()["links"]

    r = await as_ann.get(links["docx"])
    assert r.status_code == 200
    assert r.headers["content-type"].startswith(
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
    )
    document = docx.Document(io.BytesIO(r.content))
    assert document.core_properties.title == "Board meeting"
    paras = [p for p in document.paragraphs if p.text]
    assert paras[0].text == "Board meeting" and paras[0].style.name == "Heading 1"
    created = dt.datetime.fromisoformat(card["created_at"]).astimezone(dt.UTC)
    assert paras[1].text == f"{created:%Y-%m-%d %H:%M} UTC · duration 0:03 · language en"
    assert [p.text for p in paras[2:]] == [
        "[0:00] Ann: Welcome to the board. Thank you.",
        "[0:04] Ben: Revenue is up.",
        "[1:05] Ben: After a long pause.",
    ]
    # Timecode and speaker in bold, the text not.
    runs = paras[3].runs
    assert [(run.text, bool(run.bold)) for run in runs] == [
        ("[0:04] ", True),
        ("Ben: ", True),
        ("Revenue is up.", False),
    ]

    md = await as_ann.get(links["markdown"])
    assert md.headers["content-type"].startswith("text/markdown")
    assert md.text.splitlines()[:3] == ["# Board meeting", "", f"*{paras[1].text}*"]
    assert "**[0:04]** **Ben:** Revenue is up." in md.text
    machine = await as_ann.get(links["markdown"] + "?machine=true")
    assert "Numbers are up." in machine.text and "Revenue" not in machine.text

    async with signed_in(base_url, ann) as page:
        record = (await page.get(f"/recordings/{rid}")).text
        assert f'href="/recordings/{rid}/transcript.docx"' in record
        assert f'href="/recordings/{rid}/print"' in record
        printed = await page.get(f"/recordings/{rid}/print")
        page.cookies.set("transcriber_lang", "ru")
        russian = await page.get(f"/recordings/{rid}/print")
        page.cookies.delete("transcriber_lang")
        download = await page.get(f"/recordings/{rid}/transcript.docx")
    assert printed.status_code == 200
    assert "<form" not in printed.text and "<button" not in printed.text
    assert "print.css" in printed.text and "@media print" in STATIC["print.css"][0].decode()
    assert '[0:04]</span> <strong class="speaker">Ben:</strong> Revenue is up.' in printed.text
    assert "Back to the recording" in printed.text and "duration" in printed.text
    assert "Назад к записи" in russian.text and "длительность" in russian.text
    assert '<strong class="speaker">Ben:</strong> Revenue is up.' in russian.text
    assert download.headers["content-disposition"] == (
        "attachment; filename=\"Board meeting.docx\"; filename*=UTF-8''Board%20meeting.docx"
    )
    assert docx.Document(io.BytesIO(download.content)).paragraphs[0].text == "Board meeting"
