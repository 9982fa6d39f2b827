"""People's names: one line of printable text, whatever the script.

A name is printed inside other text: a line of the ticket email, a cell of the CSV export, the
check-in page, the `.ics` file. A line break or control character in it would start a line of
the attacker's choosing there (`Evil\r\nBcc: ...`), so every interface that takes a name (the
API, `import_tickets`, the admin's import) refuses them through `person_name_validate`. So are
what draws over the text around a name: characters that reverse its direction or hide in it,
and stacks of combining marks taller than a Thai syllable's.
"""

import re
import unicodedata

# C0 controls (tab, CR and LF among them), DEL, C1 controls (NEL, U+0085, among them), the
# Arabic letter mark, the zero-width characters and direction marks (U+200B-U+200F), the Unicode
# line and paragraph separators, the bidirectional embeddings and overrides (U+202A-U+202E),
# the word joiner and invisible operators (U+2060-U+2064), the bidirectional isolates
# (U+2066-U+2069) and the zero-width no-break space. Written as `\uXXXX` so that the OpenAPI
# document can state the same class (ECMAScript regular expressions read it alike).
NAME_REFUSED_CHARACTERS = (
    r"\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u2069\ufeff"
)
NAME_REFUSED_MESSAGE = (
    "Must not contain control, invisible or text-direction characters, or line breaks."
)
# A Thai syllable stacks at most 3 marks on its consonant (vowel, tone mark, and the rare
# third); more only serves to draw over the lines above and below.
MOST_COMBINING_MARKS = 3
NAME_MARKS_MESSAGE = f"Must not stack more than {MOST_COMBINING_MARKS} marks on one letter."
_REFUSED = re.compile(f"[{NAME_REFUSED_CHARACTERS}]")


def person_name_validate(value: str) -> str:
    """`value`, if it is one line of visible text; ValueError otherwise."""
    if _REFUSED.search(value):
        raise ValueError(NAME_REFUSED_MESSAGE)
    if _tallest_mark_stack(value) > MOST_COMBINING_MARKS:
        raise ValueError(NAME_MARKS_MESSAGE)
    return value


def _tallest_mark_stack(value: str) -> int:
    tallest = stack = 0
    for character in value:
        stack = stack + 1 if unicodedata.category(character) in ("Mn", "Me") else 0
        tallest = max(tallest, stack)
    return tallest
