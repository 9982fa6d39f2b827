"""People's names: one line of printable text, whatever the script.

A name is printed inside other text: a line of the ticket email, a cell of the CSV export, the
check-in page, the `.ics` file. A line break or control character in it would start a line of
the attacker's choosing there (`Evil\r\nBcc: ...`), so every interface that takes a name (the
API, `import_tickets`, the admin's import) refuses them through `person_name_validate`.
"""

import re

# C0 controls (tab, CR and LF among them), DEL, C1 controls (NEL, U+0085, among them), and the
# Unicode line and paragraph separators; written as `\uXXXX` so that the OpenAPI document can
# state the same class (ECMAScript regular expressions read it alike).
NAME_REFUSED_CHARACTERS = r"\u0000-\u001f\u007f-\u009f\u2028\u2029"
NAME_REFUSED_MESSAGE = "Must not contain control characters or line breaks."
_REFUSED = re.compile(f"[{NAME_REFUSED_CHARACTERS}]")


def person_name_validate(value: str) -> str:
    """`value`, if it holds no control character or line break; ValueError otherwise."""
    if _REFUSED.search(value):
        raise ValueError(NAME_REFUSED_MESSAGE)
    return value
