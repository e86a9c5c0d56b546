"""Whisper's languages by code, named as OpenAI's API names them in its answers
(`"language": "english"`)."""

from __future__ import annotations

_TABLE = (
    "en:english zh:chinese de:german es:spanish ru:russian ko:korean fr:french ja:japanese "
    "pt:portuguese tr:turkish pl:polish ca:catalan nl:dutch ar:arabic sv:swedish "
    "it:italian id:indonesian hi:hindi fi:finnish vi:vietnamese he:hebrew uk:ukrainian "
    "el:greek ms:malay cs:czech ro:romanian da:danish hu:hungarian ta:tamil no:norwegian "
    "th:thai ur:urdu hr:croatian bg:bulgarian lt:lithuanian la:latin mi:maori "
    "ml:malayalam cy:welsh sk:slovak te:telugu fa:persian lv:latvian bn:bengali "
    "sr:serbian az:azerbaijani sl:slovenian kn:kannada et:estonian mk:macedonian "
    "br:breton eu:basque is:icelandic hy:armenian ne:nepali mn:mongolian bs:bosnian "
    "kk:kazakh sq:albanian sw:swahili gl:galician mr:marathi pa:punjabi si:sinhala "
    "km:khmer sn:shona yo:yoruba so:somali af:afrikaans oc:occitan ka:georgian "
    "be:belarusian tg:tajik sd:sindhi gu:gujarati am:amharic yi:yiddish lo:lao uz:uzbek "
    "fo:faroese ht:haitian_creole ps:pashto tk:turkmen nn:nynorsk mt:maltese sa:sanskrit "
    "lb:luxembourgish my:myanmar bo:tibetan tl:tagalog mg:malagasy as:assamese tt:tatar "
    "haw:hawaiian ln:lingala ha:hausa ba:bashkir jw:javanese su:sundanese yue:cantonese"
)
NAMES: dict[str, str] = {
    code: name.replace("_", " ") for code, name in (pair.split(":") for pair in _TABLE.split())
}


def language_name(language: str | None) -> str | None:
    """`en` → `english`; a name or an unknown code as it is (a remote recognizer may
    have stored a name already)."""
    if language is None:
        return None
    return NAMES.get(language.lower(), language)


DETECT = ("", "auto")
"""What asks the recognizer to detect the language, as a hint."""

WHERE_LISTED = "docs/api.md, Languages, lists them"
"""Where a sender sees the codes the recognizer takes."""


class UnknownLanguage(ValueError):
    """A language hint the recognizer has no model for: refused where the recording
    comes in, since every recognition attempt would fail on it."""

    def __init__(self, code: str):
        super().__init__(
            f"language {code!r} is not one the recognizer knows: give one of Whisper's "
            f"codes such as en, ru or de ({WHERE_LISTED}), or leave it empty or auto "
            "to detect it",
        )
        self.code = code


def language_hint(value: str | None) -> str | None:
    """A sender's language hint as stored: one of Whisper's codes (`NAMES`, any case;
    `Ru` → `ru`), None for none, empty or `auto` (detect it); UnknownLanguage for
    anything else (`rus`, `xx`, `russian`). A record stored with another before this
    check keeps it: its recognition stops, as any it cannot do."""
    if value is None or value.strip().lower() in DETECT:
        return None
    code = value.strip().lower()
    if code not in NAMES:
        raise UnknownLanguage(value)
    return code
