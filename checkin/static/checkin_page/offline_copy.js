/* The check-in page's copy of an event and its queue of scans, kept in IndexedDB (CONTRACT §15,
 * §11), and the offline rules that decide a scan from the copy. Loaded before checkin.js, which
 * reads it as `window.checkinCopy`; served and cached by the page's service worker the same way.
 *
 * Each signed-in member has a database of their own, "checkin-page-<user id>" (§15: the copy and
 * the queue belong to the member; a device changes hands):
 * tickets: the sync feed's ScannerTickets, keyed [event_id, id], found by [event_id, code].
 * feeds:   per event, the feed's cursor, whether the copy is complete, when it was last fresh.
 * scans:   every scan decided offline, keyed by its scan id, with its author (user id):
 *          "pending" (to upload), "done" (the server took it), "conflict" (the server refused
 *          it), "local" (refused here, never sent: sending it could admit on the server someone
 *          the gate turned away).
 *
 * Signing out seals the member's pending scans into "checkin-page-sealed" (only what an upload
 * needs: no names, no ticket types) and deletes the member's database; the member's next sign-in
 * on the device takes them back and uploads them. No one else's sign-in sees them.
 */
window.checkinCopy = (function () {
  "use strict";

  var PREFIX = "checkin-page-";
  var LEGACY = "checkin-page";  // one database for whoever was signed in, before §15's handover
  var SEALED = "checkin-page-sealed";
  var MEMBER = /^checkin-page-(\d+)$/;
  // What an upload needs of a scan; the rest (the holder's name, the ticket type) is not kept.
  var SEALED_FIELDS = [
    "id", "seq", "author", "event_id", "organizer_id", "action", "reference_code", "ticket_id",
    "check_in_type_ids", "used_at", "note", "state",
  ];
  var member = null;
  var dbOpening = null;

  function openMember(userId) {
    return new Promise(function (resolve, reject) {
      var request = indexedDB.open(PREFIX + userId, 1);
      request.onupgradeneeded = function () {
        var d = request.result;
        var tickets = d.createObjectStore("tickets", { keyPath: ["event_id", "id"] });
        tickets.createIndex("code", ["event_id", "code"]);
        tickets.createIndex("status", ["event_id", "status"]);
        d.createObjectStore("feeds", { keyPath: "event_id" });
        var scans = d.createObjectStore("scans", { keyPath: "id" });
        scans.createIndex("seq", "seq");
      };
      request.onsuccess = function () {
        // Another page deleting this database (a sign-out) is not kept waiting.
        request.result.onversionchange = function () { request.result.close(); };
        resolve(request.result);
      };
      request.onerror = function () { reject(request.error); };
    });
  }

  function openSealed() {
    return new Promise(function (resolve, reject) {
      var request = indexedDB.open(SEALED, 1);
      request.onupgradeneeded = function () {
        request.result.createObjectStore("scans", { keyPath: "id" });
      };
      request.onsuccess = function () { resolve(request.result); };
      request.onerror = function () { reject(request.error); };
    });
  }

  // The signed-in member whose copy and queue the page works with; nothing opens without one.
  function use(userId) {
    member = userId;
    dbOpening = null;
  }

  function db() {
    if (dbOpening) return dbOpening;
    dbOpening = member ? openMember(member) : Promise.reject(new Error("nobody signed in"));
    return dbOpening;
  }

  function req(request) {
    return new Promise(function (resolve, reject) {
      request.onsuccess = function () { resolve(request.result); };
      request.onerror = function () { reject(request.error); };
    });
  }

  // Runs `work(stores)` in one transaction; resolves with its result once committed.
  function transaction(names, mode, work) {
    return db().then(function (d) {
      return new Promise(function (resolve, reject) {
        var tx = d.transaction(names, mode), stores = {}, result;
        names.forEach(function (name) { stores[name] = tx.objectStore(name); });
        Promise.resolve(work(stores)).then(function (value) { result = value; }, function (error) {
          try { tx.abort(); } catch (e) { /* already over */ }
          reject(error);
        });
        tx.oncomplete = function () { resolve(result); };
        tx.onerror = tx.onabort = function () { reject(tx.error || new Error("aborted")); };
      });
    });
  }

  function allScans() {
    return transaction(["scans"], "readonly", function (s) { return req(s.scans.index("seq").getAll()); });
  }

  // §11's offline rules: only an active ticket of a paid order is admitted.
  function offlineRule(ticket, typeId) {
    if (!ticket) return { kind: "not_found" };
    if (ticket.status === "revoked") return { kind: "revoked" };
    if (!ticket.order_paid) return { kind: "not_paid" };
    if (typeId) {
      // Multi mode: each check-in type is its own door; a ticket used at another type still enters.
      if (ticket.checked_in_type_ids.indexOf(typeId) >= 0) return { kind: "used", usedAt: ticket.used_at };
      return { kind: "admitted" };
    }
    if (ticket.status !== "active") return { kind: "used", usedAt: ticket.used_at };
    return { kind: "admitted" };
  }

  // --- the copy learns the page's own online answers at once (§15) ------------------------------
  //
  // A ticket admitted (or renewed) online is used (or active) in the copy before the next scan,
  // so a network drop right after cannot let it in twice. A feed page requested before such an
  // answer may still carry the ticket as it was: its state is not stored over the answer's (the
  // feed brings the change again after that page's cursor, so nothing is lost).

  var generation = 0;   // counts the answers learned
  var learnedAt = {};   // "event|ticket" -> the generation of its last learned answer

  // The mark a feed page's request takes: the answers learned so far are older than the page.
  function feedMark() { return generation; }

  function storeFeedTickets(store, eventId, tickets, mark) {
    tickets.forEach(function (t) {
      if (learnedAt[eventId + "|" + t.id] > mark) return;
      t.event_id = eventId;
      t.code = String(t.reference_code).toUpperCase();
      store.put(t);
    });
  }

  // The check-in types a ticket holds after the answer: multi mode's per-type results.
  function typesAfter(types, answer, action) {
    var held = (types || []).slice();
    (answer.check_in_results || []).forEach(function (result) {
      // Admitted now, or already in ("Already checked in at ..." carries its time).
      if ((result.success || result.used_at) && held.indexOf(result.check_in_type_id) < 0) {
        held.push(result.check_in_type_id);
      }
    });
    if (action === "renew") {
      (answer.renew_results || []).forEach(function (result) {
        if (result.success) held = held.filter(function (t) { return t !== result.check_in_type_id; });
      });
    }
    return held;
  }

  // A ticket the copy lacks (created after its last sync) and the server just admitted.
  function fromAnswer(eventId, ticket) {
    var type = ticket.ticket_type || {};
    return {
      event_id: eventId, id: ticket.id, reference_code: ticket.reference_code,
      code: String(ticket.reference_code).toUpperCase(), nfc_uid: null,
      ticket_type_id: Number(type.id), ticket_type_name: type.name || "",
      checked_in_type_ids: [], updated_at: ticket.updated_at,
    };
  }

  // Writes into the copy the ticket of a check-in or renew answer (`status` 200 or a refusal
  // carrying the ticket); resolves once it is stored.
  function learn(eventId, status, answer, action) {
    var ticket = answer && answer.ticket;
    if (!ticket || !ticket.id) return Promise.resolve();
    generation += 1;
    learnedAt[eventId + "|" + ticket.id] = generation;
    return transaction(["tickets"], "readwrite", function (s) {
      return req(s.tickets.get([eventId, ticket.id])).then(function (kept) {
        var copied = kept || (status === 200 ? fromAnswer(eventId, ticket) : null);
        if (!copied) return;
        copied.status = ticket.status;
        copied.used_at = ticket.used_at;
        copied.firstname = ticket.firstname;
        copied.lastname = ticket.lastname;
        // A 200 passed the gate's rules, the order's payment among them.
        if (status === 200) copied.order_paid = true;
        if (answer.error === "order_not_paid") copied.order_paid = false;
        // An active ticket holds no check-in type (§7: it is active again once none remains).
        copied.checked_in_type_ids = ticket.status === "active"
          ? [] : typesAfter(copied.checked_in_type_ids, answer, action);
        s.tickets.put(copied);
      });
    });
  }

  // A ticket the copy lacks, as a verified signed code names it (§14): an active ticket of a paid
  // order as far as this device can tell, which the offline rules admit; the upload decides.
  function fromSignedCode(eventId, payload, feed) {
    var types = (feed && feed.types) || {};
    return {
      event_id: eventId, id: payload.t, reference_code: payload.c, code: payload.c.toUpperCase(),
      nfc_uid: null, status: "active", order_paid: true, ticket_type_id: payload.y,
      ticket_type_name: types[payload.y] || "", firstname: "", lastname: "", used_at: null,
      checked_in_type_ids: [], updated_at: null, vouched: true,
    };
  }

  // The event's ticket type names by id, `kept` updated with a feed page's tickets.
  function typeNames(kept, tickets) {
    var names = {};
    Object.keys(kept || {}).forEach(function (id) { names[id] = kept[id]; });
    (tickets || []).forEach(function (t) { names[t.ticket_type_id] = t.ticket_type_name; });
    return names;
  }

  // --- a device changes hands (§15) -------------------------------------------------------------

  function oneTransaction(d, names, mode, work) {
    return new Promise(function (resolve, reject) {
      var tx = d.transaction(names, mode), result;
      result = work(tx);
      tx.oncomplete = function () { resolve(result); };
      tx.onerror = tx.onabort = function () { reject(tx.error || new Error("aborted")); };
    });
  }

  function deleteDatabase(name) {
    return new Promise(function (resolve, reject) {
      var request = indexedDB.deleteDatabase(name);
      request.onsuccess = function () { resolve(); };
      request.onerror = function () { reject(request.error); };
    });
  }

  function exists(name) {
    if (!indexedDB.databases) return Promise.resolve(true);
    return indexedDB.databases().then(function (all) {
      return all.some(function (d) { return d.name === name; });
    });
  }

  // Seals the member's pending scans (theirs only, stripped to what an upload needs) and deletes
  // the member's database: their copy of the events, their answered scans, the names. After
  // this the page opens nothing until a member is named again.
  function seal(userId) {
    var name = PREFIX + userId;
    if (userId === member) {
      var open = dbOpening;
      member = null;
      dbOpening = null;
      if (open) open.then(function (d) { d.close(); }, function () {});
    }
    return exists(name).then(function (found) {
      if (!found) return null;
      return openMember(userId).then(function (d) {
        return oneTransaction(d, ["scans"], "readonly", function (tx) {
          var got = tx.objectStore("scans").getAll();
          return got;
        }).then(function (got) {
          d.close();
          var pending = got.result.filter(function (scan) {
            return scan.state === "pending" && scan.author === userId;
          });
          if (!pending.length) return null;
          return openSealed().then(function (sealed) {
            return oneTransaction(sealed, ["scans"], "readwrite", function (tx) {
              var store = tx.objectStore("scans");
              pending.forEach(function (scan) {
                var kept = {};
                SEALED_FIELDS.forEach(function (field) { if (field in scan) kept[field] = scan[field]; });
                store.put(kept);
              });
            }).finally(function () { sealed.close(); });
          });
        });
      }).then(function () { return deleteDatabase(name); });
    });
  }

  // The member's sealed scans back into their own queue, to be uploaded under their sign-in:
  // written there first, then taken out of the seal (a page closed in between repeats the move,
  // and a scan id is uploaded once).
  function unseal(userId) {
    return exists(SEALED).then(function (found) {
      if (!found) return 0;
      return openSealed().then(function (sealed) {
        return oneTransaction(sealed, ["scans"], "readonly", function (tx) {
          return tx.objectStore("scans").getAll();
        }).then(function (got) {
          var theirs = got.result.filter(function (scan) { return scan.author === userId; });
          if (!theirs.length) return 0;
          return transaction(["scans"], "readwrite", function (s) {
            theirs.forEach(function (scan) {
              scan.name = scan.name || "";
              scan.ticket_type = scan.ticket_type || "";
              s.scans.put(scan);
            });
          }).then(function () {
            return oneTransaction(sealed, ["scans"], "readwrite", function (tx) {
              var store = tx.objectStore("scans");
              theirs.forEach(function (scan) { store.delete(scan.id); });
            });
          }).then(function () { return theirs.length; });
        }).finally(function () { sealed.close(); });
      });
    });
  }

  // Other members' databases left on the device (a session that ended without signing out):
  // sealed too, so the member now signed in never holds another's copy.
  function sealOthers(userId) {
    if (!indexedDB.databases) return Promise.resolve();
    return indexedDB.databases().then(function (all) {
      return Promise.all(all.map(function (d) {
        var found = MEMBER.exec(d.name || "");
        return found && Number(found[1]) !== userId ? seal(Number(found[1])) : null;
      }));
    });
  }

  // The database of the page before the handover rule: its copy (attendee data of whoever used
  // the device) is deleted; its pending scans name no author, so they are sealed with none and
  // are never uploaded under anyone's sign-in.
  function retireLegacy() {
    return exists(LEGACY).then(function (found) {
      if (!found) return null;
      return new Promise(function (resolve, reject) {
        var request = indexedDB.open(LEGACY);
        request.onsuccess = function () { resolve(request.result); };
        request.onerror = function () { reject(request.error); };
      }).then(function (d) {
        if (!d.objectStoreNames.contains("scans")) { d.close(); return null; }
        return oneTransaction(d, ["scans"], "readonly", function (tx) {
          return tx.objectStore("scans").getAll();
        }).then(function (got) {
          d.close();
          var pending = got.result.filter(function (scan) { return scan.state === "pending"; });
          if (!pending.length) return null;
          return openSealed().then(function (sealed) {
            return oneTransaction(sealed, ["scans"], "readwrite", function (tx) {
              var store = tx.objectStore("scans");
              pending.forEach(function (scan) {
                var kept = {};
                SEALED_FIELDS.forEach(function (field) { if (field in scan) kept[field] = scan[field]; });
                kept.author = null;
                store.put(kept);
              });
            }).finally(function () { sealed.close(); });
          });
        });
      }).then(function () { return deleteDatabase(LEGACY); });
    });
  }

  return {
    use: use, seal: seal, unseal: unseal, sealOthers: sealOthers, retireLegacy: retireLegacy,
    transaction: transaction, req: req, allScans: allScans, offlineRule: offlineRule,
    learn: learn, feedMark: feedMark, storeFeedTickets: storeFeedTickets,
    fromSignedCode: fromSignedCode, typeNames: typeNames,
  };
})();
