/* Signed ticket codes (CONTRACT §14), read and verified on the device: `T1.<payload>.<signature>`,
 * `payload` the base64url of {"o", "e", "t", "y", "c", "k"} (organizer, event, ticket, ticket
 * type, reference code, key id), `signature` the Ed25519 signature of `T1.<payload>` by the
 * event's key `k`. Offline, a ticket missing from the copy (sold after its last sync) is admitted
 * when its code verifies with one of the keys the sync feed lists (§11) and names this event;
 * the upload then decides as always. Verified with the browser's own WebCrypto (Ed25519): no
 * library. Loaded before checkin.js, which reads it as `window.checkinSigned`.
 */
window.checkinSigned = (function () {
  "use strict";

  var PREFIX = "T1.";
  // As the server reads them: a 64-byte signature, and nothing longer than the longest code.
  var CODE = /^T1\.([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]{86})$/;
  var MAX_LENGTH = 300;
  var INT32_MAX = 2147483647;
  var imported = {};  // "key id|public key" -> the CryptoKey, imported once

  function isSigned(code) {
    return code.slice(0, PREFIX.length) === PREFIX;
  }

  function unb64(text) {
    var bytes = atob(text.replace(/-/g, "+").replace(/_/g, "/"));
    return Uint8Array.from(bytes, function (c) { return c.charCodeAt(0); });
  }

  function ascii(text) {
    return Uint8Array.from(text, function (c) { return c.charCodeAt(0); });
  }

  function whole(value) {
    return typeof value === "number" && value % 1 === 0 && value >= 1 && value <= INT32_MAX;
  }

  // The payload's fields, each of its type, or null for anything that is not a signed code.
  // Nothing read here is trusted until `verify` says so.
  function read(code) {
    var matched = code.length <= MAX_LENGTH ? CODE.exec(code) : null;
    if (!matched) return null;
    var data;
    try {
      data = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(unb64(matched[1])));
    } catch (e) {
      return null;
    }
    if (!data || typeof data !== "object") return null;
    if (!["o", "e", "t", "y"].every(function (name) { return whole(data[name]); })) return null;
    if (typeof data.c !== "string" || typeof data.k !== "string") return null;
    return { payload: data, signed: PREFIX + matched[1], signature: matched[2] };
  }

  function publicKey(key) {
    var name = key.key_id + "|" + key.public_key;
    if (!imported[name]) {
      imported[name] = crypto.subtle.importKey(
        "raw", unb64(key.public_key), { name: "Ed25519" }, false, ["verify"]);
      imported[name].catch(function () { delete imported[name]; });
    }
    return imported[name];
  }

  // Resolves with the payload of `code` when its signature verifies with the key it names among
  // `keys` (the sync feed's: a retired key is absent) and it is a code of `event`'s; else null
  // (forged, swapped, another event's or organizer's, unknown key, or no Ed25519 here).
  function verify(code, keys, event) {
    var found = read(code);
    if (!found || found.payload.e !== event.id || found.payload.o !== event.organizer_id) {
      return Promise.resolve(null);
    }
    var key = (keys || []).filter(function (k) {
      return k.key_id === found.payload.k && k.algorithm === "Ed25519";
    })[0];
    if (!key || !window.crypto || !crypto.subtle) return Promise.resolve(null);
    return publicKey(key).then(function (cryptoKey) {
      return crypto.subtle.verify({ name: "Ed25519" }, cryptoKey, unb64(found.signature), ascii(found.signed));
    }).then(function (valid) {
      return valid ? found.payload : null;
    }, function () {
      return null;
    });
  }

  // The reference code a code names: its payload's "c" for a signed code (to find its ticket in
  // the copy, whether or not it verifies: a printed code finds it as well), "" when unreadable.
  function referenceCode(code) {
    if (!isSigned(code)) return code;
    var found = read(code);
    return found ? found.payload.c.toUpperCase() : "";
  }

  return { isSigned: isSigned, read: read, verify: verify, referenceCode: referenceCode };
})();
