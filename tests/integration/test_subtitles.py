"""Subtitle profiles over HTTP and on real speech (capability `subtitles`), and the
owner's correction of a segment over the API (capability `page`'s correction, the same
domain function): `?profile=` and `?report=true` on the API's, the page's and a share
link's SRT and VTT; `PUT /v1/recordings/{id}/segments/{index}`; the checker's command;
and the bundled model's transcripts of the samples, whose every profile's export keeps
the rules the speech allows and every word."""

from __future__ import annotations

import tempfile
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio

from tests.helpers.api_clients import client, uploaded
from tests.helpers.cli_process import cli
from tests.helpers.pages import signed_in, transcribed_with_audio
from tests.helpers.pg_pipeline import journal
from tests.unit.test_cue_escaping import parse_srt
from transcriber.audio.processes import ProcessRecognizer
from transcriber.config import Config
from transcriber.db.database import Database
from transcriber.owners import NewOwner
from transcriber.pipeline.audio_steps import audio_steps
from transcriber.pipeline.oneshot import transcribe_file
from transcriber.records.shares import add_share
from transcriber.subtitles import check, cues
from transcriber.subtitles.profiles import PROFILES

SAMPLES = Path(__file__).resolve().parents[2] / "samples"


def scenario(title: str) -> pytest.MarkDecorator:
    return pytest.mark.scenario("subtitles", title)


LONG = (
    "Good evening and welcome to the city council. Tonight we will talk about the new "
    "bridge over the river, the budget for the schools, and the plans for the park."
)
SPOKEN = [
    {"start": 0.0, "end": 9.0, "text": LONG},
    {"start": 9.0, "end": 10.0, "text": "Thank you."},
]


def words_of(srt: str) -> list[str]:
    return [w for cue in parse_srt(srt) for w in cue.split()]


@scenario("Subtitle downloads follow a profile, the default general, segments as before")
async def test_profiles_over_the_api_the_page_and_a_share_link(
    db: Database, config: Config, base_url: str, ann: NewOwner, as_ann: httpx.AsyncClient
) -> None:
    rid = (await uploaded(as_ann))["id"]
    await transcribed_with_audio(db, config, SPOKEN, " ".join(s["text"] for s in SPOKEN))
    api = f"/v1/recordings/{rid}/transcript"
    default = (await as_ann.get(f"{api}.srt")).text
    assert default == (await as_ann.get(f"{api}.srt?profile=general")).text
    # The 9 s segment of 150 characters is more than one cue of two 42-character lines.
    assert len(parse_srt(default)) >= 3 and words_of(default) == [*LONG.split(), "Thank", "you."]
    assert check.check(check.parse(default), PROFILES["general"]) == []
    # `segments`: the cues of before, one per segment.
    segments = (await as_ann.get(f"{api}.srt?profile=segments")).text
    assert parse_srt(segments) == [LONG, "Thank you."]
    bbc = (await as_ann.get(f"{api}.vtt?profile=bbc")).text
    assert bbc.startswith("WEBVTT\n\n")
    assert all(len(line) <= 37 for c in check.parse(bbc) for line in c.lines)

    # The report instead of the file, as JSON.
    r = await as_ann.get(f"{api}.srt?profile=netflix-en&report=true")
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    report = r.json()
    assert report["profile"] == "netflix-en" and report["cues"] == len(parse_srt(default))
    assert set(report["counts"]) == set(check.RULES)
    assert report["ok"] == (report["broken"] == [])

    # Unknown names answer 422 naming the known ones; a profile of a text is refused.
    r = await as_ann.get(f"{api}.srt?profile=netflix")
    assert r.status_code == 422
    assert "general, netflix-en, netflix-ru, bbc, segments" in r.json()["error"]
    assert (await as_ann.get(f"{api}.srt?profile=segments&report=true")).status_code == 422

    # The page's downloads and a share link's take the same.
    async with signed_in(base_url, ann) as page:
        # The page's download menu offers every profile, SRT and VTT.
        html = (await page.get(f"/recordings/{rid}")).text
        for name in (*PROFILES, "segments"):
            for fmt in ("srt", "vtt"):
                assert f'href="/recordings/{rid}/transcript.{fmt}?profile={name}"' in html
        got = await page.get(f"/recordings/{rid}/transcript.srt?profile=segments")
        assert got.status_code == 200 and got.text == segments
        assert "attachment" in got.headers["content-disposition"]
        got = await page.get(f"/recordings/{rid}/transcript.vtt?profile=bbc&report=true")
        assert got.json()["profile"] == "bbc"
        # A profile of a text is refused, not ignored.
        assert (await page.get(f"/recordings/{rid}/transcript.txt?profile=bbc")).status_code == 422
    made = await add_share(db, ann.id, uuid.UUID(rid), note="", expires_at=None)
    assert made is not None
    async with client(base_url) as anyone:
        base = f"/s/{made[0]}/transcript"
        view = (await anyone.get(f"/s/{made[0]}")).text
        assert f'href="{base}.vtt?profile=netflix-ru"' in view
        assert (await anyone.get(f"{base}.srt")).text == default
        assert (await anyone.get(f"{base}.srt?profile=segments")).text == segments
        shared = await anyone.get(f"{base}.srt?profile=netflix-en&report=true")
        assert shared.json() == report
        assert (await anyone.get(f"{base}.srt?profile=netflix")).status_code == 422
        # A wrong secret stays the share's own refusal, whatever the profile.
        wrong = await anyone.get(f"/s/{'A' * 43}/transcript.srt?profile=netflix")
        assert wrong.status_code == 404


@scenario("The owner corrects a segment over the API, as on the page")
async def test_segment_text_over_the_api(
    db: Database, config: Config, as_ann: httpx.AsyncClient, as_ben: httpx.AsyncClient
) -> None:
    rid = (await uploaded(as_ann))["id"]
    put = f"/v1/recordings/{rid}/segments"
    # Not transcribed yet: 409 with the card.
    early = await as_ann.put(f"{put}/0", json={"text": "Too early."})
    assert early.status_code == 409 and early.json()["id"] == rid
    await transcribed_with_audio(db, config, SPOKEN, " ".join(s["text"] for s in SPOKEN))

    r = await as_ann.put(f"{put}/1", json={"text": "  Thank you all.  "})
    assert r.status_code == 200, r.text
    assert r.json() == {
        "segment": 1,
        "text": "Thank you all.",
        "machine_text": "Thank you.",
        "corrected": True,
    }
    srt = (await as_ann.get(f"/v1/recordings/{rid}/transcript.srt")).text
    assert parse_srt(srt)[-1] == "Thank you all."
    machine = (await as_ann.get(f"/v1/recordings/{rid}/transcript.srt?machine=true")).text
    assert parse_srt(machine)[-1] == "Thank you."

    # Another owner's record is a 404, and changes nothing.
    assert (await as_ben.put(f"{put}/1", json={"text": "Mine."})).status_code == 404
    # Out of range, a line break, too long, a field that is not the text: 422.
    for index, body in (
        (2, {"text": "No such."}),
        (-1, {"text": "No such."}),
        (0, {"text": "Two\nlines"}),
        (0, {"text": "x" * 2001}),
        (0, {"text": "Fine.", "speaker": "Eve"}),
    ):
        refused = await as_ann.put(f"{put}/{index}", json=body)
        assert refused.status_code == 422, (index, body, refused.text)
    assert (
        "no segment 2; the transcript has 2"
        in (await as_ann.put(f"{put}/2", json={"text": "x"})).json()["error"]
    )
    assert parse_srt((await as_ann.get(f"/v1/recordings/{rid}/transcript.srt")).text) == (
        parse_srt(srt)
    )

    # Null and empty restore the machine's text.
    for restore in (None, ""):
        await as_ann.put(f"{put}/1", json={"text": "Again."})
        r = await as_ann.put(f"{put}/1", json={"text": restore})
        assert r.json() == {
            "segment": 1,
            "text": "Thank you.",
            "machine_text": "Thank you.",
            "corrected": False,
        }
    events = [e for e in await journal(db, uuid.UUID(rid)) if e["kind"] == "corrected"]
    assert [(e["origin"], e["detail"]["via"], e["detail"].get("restored")) for e in events] == [
        ("human", "api", None),
        ("human", "api", None),
        ("human", "api", True),
        ("human", "api", None),
        ("human", "api", True),
    ]
    assert all(e["detail"]["owner_id"] and e["detail"]["segment"] == 1 for e in events)


@scenario("The checker's command exits 1 naming each broken rule, 0 when all hold")
async def test_the_check_command(tmp_path: Path) -> None:
    good = tmp_path / "good.srt"
    good.write_text(cues.render("srt", SPOKEN, PROFILES["general"]))
    bad = tmp_path / "bad.vtt"
    bad.write_text(
        "WEBVTT\n\n00:00.000 --> 00:09.000\n<v Ann>" + "word " * 12 + "\n\n"
        "00:09.010 --> 00:09.500\nYes.\n"
    )
    ok = await cli(None, "subtitles", "check", str(good))
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert ok.stdout.strip().endswith("cues keep general's rules")
    broken = await cli(None, "subtitles", "check", str(bad), "--profile", "netflix-en")
    assert broken.returncode == 1
    assert "bad.vtt: cue 1: line_length: line 1 has 59 characters, at most 42" in broken.stdout
    assert "cue 1: max_duration: 9.000 s, at most 7.000 s" in broken.stdout
    assert "cue 1: gap:" in broken.stdout and "cue 2: min_duration:" in broken.stdout
    unknown = await cli(None, "subtitles", "check", str(bad), "--profile", "nope")
    assert unknown.returncode == 2 and "choose from general" in unknown.stderr
    words = tmp_path / "words.srt"
    words.write_text("just words\n")
    assert (await cli(None, "subtitles", "check", str(words))).returncode == 2


# --- real speech ----------------------------------------------------------------------------

FORCED_ONLY = {"min_duration", "reading_speed"}
"""What speech can force: a cue whose next begins at once cannot be held longer."""


def measured(segments: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per profile, the share of cues breaking each rule."""
    out = {}
    for name, profile in PROFILES.items():
        parsed = check.parse(cues.render("srt", segments, profile))
        counts = check.report(parsed, profile)["counts"]
        assert isinstance(counts, dict)
        out[name] = {rule: n / max(1, len(parsed)) for rule, n in counts.items()}
    return out


@scenario("Every profile's export of real speech keeps the rules the speech allows")
@pytest.mark.parametrize("sample", ["en", "ru"])
async def test_real_speech_keeps_the_rules(
    db: Database, tmp_path: Path, model_dir: Path, warm_recognizer: ProcessRecognizer, sample: str
) -> None:
    config = Config(home=tmp_path, model=str(model_dir))
    with trio.fail_after(240):
        done = await transcribe_file(
            db, config, audio_steps(config, warm_recognizer), SAMPLES / f"{sample}.ogg",
            language=sample,
        )  # fmt: skip
    t = done.transcript
    assert t is not None and t["segments"], done.card
    assert any(s.get("words") for s in t["segments"])
    spoken = [w for s in t["segments"] for w in s["text"].split()]
    for name, profile in PROFILES.items():
        for fmt in ("srt", "vtt"):
            body = cues.render(fmt, t["segments"], profile)
            parsed = check.parse(body)
            assert [w for c in parsed for line in c.lines for w in line.split()] == spoken
            broken = check.check(parsed, profile)
            assert {b.rule for b in broken} <= FORCED_ONLY, (name, fmt, broken, body)
            for b in broken:
                if b.rule == "min_duration":
                    # Only where the next cue begins one gap later: no silence to hold.
                    at = b.cue - 1
                    assert at + 1 < len(parsed), (name, b)
                    room = parsed[at + 1].start - parsed[at].end
                    assert room <= profile.min_gap_s + 0.002, (name, b, room)
    # The measure the report quotes: written beside, not asserted.
    shares = measured(t["segments"])
    with open(Path(tempfile.gettempdir()) / f"subtitles-measure-{sample}.txt", "w") as f:
        f.write(f"{sample}: {len(t['segments'])} segments, {len(spoken)} words\n")
        for name, rules in shares.items():
            f.write(f"{sample} {name} " + " ".join(f"{r}={v:.2f}" for r, v in rules.items()) + "\n")
            f.write(cues.render("srt", t["segments"], PROFILES[name]) + "\n")


@scenario("The one-shot command writes subtitles by a profile")
async def test_transcribe_command_by_a_profile(
    db_url: str, tmp_path: Path, model_dir: Path
) -> None:
    home = str(tmp_path / "home")
    with trio.fail_after(240):
        done = await cli(
            db_url, "transcribe", str(SAMPLES / "en.ogg"), "--format", "srt",
            "--subtitles", "bbc", home=home, model=str(model_dir),
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    parsed = check.parse(done.stdout)
    assert len(parsed) > 1 and all(len(line) <= 37 for c in parsed for line in c.lines)
    assert "March." in done.stdout
    written = tmp_path / "en.srt"
    written.write_text(done.stdout)
    checked = await cli(None, "subtitles", "check", str(written), "--profile", "bbc")
    assert {line.split(": ")[2] for line in checked.stdout.splitlines()[:-1]} <= {
        "reading_speed"
    }, checked.stdout
    # Refused before anything is done: an unknown profile, a profile of a text.
    for args in (("--format", "srt", "--subtitles", "nope"), ("--subtitles", "bbc")):
        refused = await cli(
            db_url, "transcribe", str(SAMPLES / "en.ogg"), *args, home=str(tmp_path / "h2")
        )
        assert refused.returncode == 2, (args, refused.stderr)
        assert not (tmp_path / "h2").exists()
    assert "choose from general" in refused.stderr or "applies to" in refused.stderr
