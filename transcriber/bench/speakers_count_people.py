"""The speaker count judged on voices of people (issue 36, seventh round): conversations
made as judge5's are, but each voice is a different person's, a flite or festival voice
built from recordings of that person (diphones, clustergen or HTS), where every earlier set
has variants of espeak-ng's one formant synthesizer. Frozen and committed before anything
was measured on these voices (no window of them embedded, none listened to), and scored
once after: the count as it is 22 of 35 (63 %), mean DER 3.5 %; by voices speaking 1: 4/5,
2: 6/8, 3: 4/7, 4: 3/6, 5: 3/5, 6: 2/4 (docs/pipeline.md, "Seventh round"). The voice rule
on them: transcriber/bench/voices_people.py.

Debian's packages: `apt-get install flite festival festvox-kdlpc16k festvox-czech-dita
festvox-czech-krb festvox-czech-machac festvox-czech-ph festvox-suopuhe-lj
festvox-suopuhe-mv festvox-italp16k festvox-itapc16k festvox-ca-ona-hts`. Each voice reads
the same English sentences; the Czech, Finnish, Italian and Catalan ones in their own
language's sounds, which changes what is said, not who says it.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

PEOPLE_VOICES = (
    ("flite:awb", ""),
    ("festival:czech_dita", ""),
    ("flite:rms", ""),
    ("festival:lp_diphone", ""),
    ("festival:ked_diphone", ""),
    ("festival:suo_fi_lj_diphone", ""),
    ("flite:kal16", ""),
    ("festival:czech_krb", ""),
    ("festival:pc_diphone", ""),
    ("festival:upc_ca_ona_hts", ""),
    ("festival:czech_machac", ""),
    ("flite:slt", ""),
    ("festival:hy_fi_mv_diphone", ""),
    ("festival:czech_ph", ""),
)
"""Fourteen people, one voice each, ordered so that neighbours are of other synthesizers
(a conversation of N voices takes N neighbours). Not among them: festival's kal_diphone and
cmu_us_slt_arctic_hts (the same people as flite's kal16 and slt), msu_ru_nsh (241 MB) and
hindi_NSK (festival 2.5 crashes on it)."""
PEOPLE_PAIRS = (
    (("flite:rms", ""), ("flite:slt", "")),
    (("festival:czech_machac", ""), ("festival:czech_dita", "")),
    (("festival:pc_diphone", ""), ("festival:lp_diphone", "")),
)
"""A man and a woman of one synthesizer and language (the issue's case)."""


def people_available() -> bool:
    """Whether flite, festival and every voice of PEOPLE_VOICES are installed."""
    if shutil.which("flite") is None or shutil.which("text2wave") is None:
        return False
    festival = Path("/usr/share/festival/voices")
    wanted = {v.partition(":")[2] for v, _ in PEOPLE_VOICES if v.startswith("festival:")}
    return wanted <= {p.name for p in festival.glob("*/*")}


def people_set() -> list[Any]:
    """35 conversations, seeds 16000+ (judge3's meeting_set, as judge5): the usual turns ×
    3, one voice of one-sentence turns twice."""
    from transcriber.bench.speakers_count_judge3 import meeting_set

    return meeting_set("people", 16000, PEOPLE_VOICES, PEOPLE_PAIRS, 3, (("1-0", 2), ("1-1", 8)))
