"""The API document's guide to signed ticket codes (CONTRACT §14), for partners writing their own
scanner: the format, where the keys come from, and how to verify a code (Python, JavaScript).

A drf-spectacular postprocessing hook appends it to the document's description; a test runs the
Python example against a real ticket's QR code, so the guide cannot drift from the codes.
"""

SIGNED_CODES_GUIDE = """
## Signed ticket codes

A ticket's QR code carries either its reference code (as printed) or, for an event with signed
codes, its **signed code**: `T1.<payload>.<signature>`. A scanner tells the two apart by the
`T1.` prefix.

- `payload`: base64url (no padding) of the UTF-8 JSON object
  `{"o": organizer_id, "e": event_id, "t": ticket_id, "y": ticket_type_id, "c": reference_code,
  "k": key_id}`.
- `signature`: base64url (no padding) of the Ed25519 signature of the ASCII text `T1.<payload>`
  by the event's key `key_id`.

**Keys.** Every response of the sync feed (`GET .../events/{event_id}/tickets/sync`) lists the
event's keys: `keys: [{key_id, algorithm: "Ed25519", public_key, active}]`, `public_key` being
the raw 32-byte public key in base64url without padding. `active` marks the key that signs new
codes; the others still verify the codes they signed. A key the organizer retired is no longer
listed, and its codes are unknown codes: drop keys that disappear from the feed.

**Offline.** A ticket missing from the scanner's copy (sold after its last sync) may be admitted
when its code verifies with one of the feed's keys and `e` and `o` are the event's and its
organizer's. Queue the scan and upload it (`POST .../events/{event_id}/checkins`, the whole code
as `reference_code`): the server decides again, as for any scan.

**Online.** Every endpoint that takes a `reference_code` (search, check-in and renew by code,
batch upload) accepts the whole signed code; one that does not verify is a 404 `not_found`, as
an unknown code is.

Python ([cryptography](https://cryptography.io)):

```python
import base64
import json

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey


def b64url_decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def signed_code_verify(code: str, keys: list, organizer_id: int, event_id: int) -> dict | None:
    \"\"\"The payload of a code signed for this event, else None. `keys`: the feed's `keys`.\"\"\"
    parts = code.strip().split(".")
    if len(parts) != 3 or parts[0] != "T1":
        return None
    try:
        data = json.loads(b64url_decode(parts[1]))
        key = next(k for k in keys if k["key_id"] == data["k"])
        if data["e"] != event_id or data["o"] != organizer_id:
            return None
        public_key = Ed25519PublicKey.from_public_bytes(b64url_decode(key["public_key"]))
        public_key.verify(b64url_decode(parts[2]), f"T1.{parts[1]}".encode("ascii"))
    except (ValueError, KeyError, TypeError, StopIteration, InvalidSignature):
        return None
    return data  # data["t"]: the ticket's id; data["c"]: its reference code
```

JavaScript (WebCrypto, in browsers with Ed25519 and in Node.js 20+):

```javascript
function b64urlDecode(text) {
  const b64 = text.replace(/-/g, "+").replace(/_/g, "/");
  const padded = b64 + "=".repeat((4 - (b64.length % 4)) % 4);
  return Uint8Array.from(atob(padded), (c) => c.charCodeAt(0));
}

// The payload of a code signed for this event, else null. `keys`: the feed's `keys`.
async function signedCodeVerify(code, keys, organizerId, eventId) {
  const parts = code.trim().split(".");
  if (parts.length !== 3 || parts[0] !== "T1") return null;
  try {
    const data = JSON.parse(new TextDecoder().decode(b64urlDecode(parts[1])));
    const key = keys.find((k) => k.key_id === data.k);
    if (!key || data.e !== eventId || data.o !== organizerId) return null;
    const publicKey = await crypto.subtle.importKey(
      "raw", b64urlDecode(key.public_key), { name: "Ed25519" }, false, ["verify"]);
    const valid = await crypto.subtle.verify(
      { name: "Ed25519" }, publicKey, b64urlDecode(parts[2]),
      new TextEncoder().encode(`T1.${parts[1]}`));
    return valid ? data : null;  // data.t: the ticket's id; data.c: its reference code
  } catch (error) {
    return null;  // not base64url, not JSON, or not a key
  }
}
```
"""


def signed_codes_described(result: dict, **kwargs) -> dict:
    """Append the signed codes guide to the document's description."""
    info = result.setdefault("info", {})
    info["description"] = (info.get("description") or "").rstrip() + "\n" + SIGNED_CODES_GUIDE
    return result
