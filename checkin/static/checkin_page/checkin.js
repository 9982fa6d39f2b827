/* The staff check-in page (CONTRACT §15): a client of the public API like any scanner app.
 *
 * Each scan is one small request (scan-by-code check-in, §7); counts come from §12's stats.
 * The API token is minted for the signed-in user by this site (POST token_url) and renewed
 * before it expires, so the API's access rules (§3) apply to the page unchanged.
 * No framework, no build step, nothing from another site.
 *
 * Offline (§15, §11): a service worker keeps the page and its assets; the picked event is copied
 * into IndexedDB from the sync feed and kept fresh by cursor; when the API does not answer within
 * a short timeout, a scan is decided from that copy by the offline rules and queued with its own
 * scan id; the queue is uploaded with the batch endpoint when the network returns, and a scan the
 * server refuses after the fact is listed for staff. Every scan has its scan id (§7) from the
 * start: sent online, sent again when the answer is lost, kept when the scan is queued, so the
 * server applies it once however it arrives. A signed code (§14) of a ticket sold after the last
 * sync is verified on the device (signed_codes.js) and admitted from what it carries.
 *
 * A device changes hands (§15): the copy and the queue are the signed-in member's (config.user_id)
 * and every queued scan names its author. Signing out uploads the queue first when online (for a
 * few seconds at most), seals what could not go up to its author, deletes the member's copy and
 * the cached page, and only then ends the session. A page whose sign-in was ended on this device
 * (opened later from a cache, or rendered for a session whose sign-out never reached the server)
 * admits nobody.
 */
(function () {
  "use strict";

  var config = JSON.parse(document.getElementById("checkin-config").textContent);
  var L = config.labels;
  var me = config.user_id || null;
  var signOutForm = document.querySelector("form.signout");
  var csrf = document.querySelector('meta[name="csrf-token"]').content;
  var $ = function (id) { return document.getElementById(id); };
  var els = {
    event: $("event"), typeRow: $("type-row"), type: $("check-in-type"),
    result: $("result"), title: $("result-title"), name: $("result-name"),
    detail: $("result-detail"), undo: $("undo"), counts: $("counts"),
    manual: $("manual"), code: $("code"), toggle: $("camera-toggle"), gate: $("gate"),
    cameraStatus: $("camera-status"), video: $("video"),
    freshness: $("freshness"), conflicts: $("conflicts"), conflictList: $("conflict-list"),
    conflictsClear: $("conflicts-clear"),
  };

  var token = null;          // {value, renewAt}
  var lastAdmission = null;  // {ticketId, name, typeId}
  var admittedHere = {};     // reference code -> time this device admitted it
  var busy = false;
  var closed = false;        // signed out, or nobody signed in: the page admits nobody
  var stream = null;
  var statsTimer = null;
  // The page's language and its calendar (Thai: Buddhist era), not the browser's own.
  var timeFormat = new Intl.DateTimeFormat(config.locale, {
    timeZone: config.time_zone, dateStyle: "medium", timeStyle: "short",
  });

  function fill(template, values) {
    return template.replace(/%\((\w+)\)s/g, function (_, key) { return values[key]; });
  }

  function localTime(iso) {
    return iso ? timeFormat.format(new Date(iso)) : "";
  }

  function currentEvent() {
    var id = Number(els.event.value);
    return config.events.filter(function (e) { return e.id === id; })[0] || null;
  }

  var shown = 0;  // which result is on screen: a late answer must not rewrite a newer one

  function show(kind, title, name, detail, offline) {
    shown += 1;
    els.result.className = "result result-" + kind + (offline ? " result-offline" : "");
    els.title.textContent = title + (offline ? " · " + L.offline_mark : "");
    els.name.textContent = name || "";
    els.detail.textContent = detail || "";
    if (kind === "refused" && lastAdmission) {
      // A later refusal: the undo button would otherwise point at someone long gone.
      lastAdmission = null;
      els.undo.hidden = true;
    }
    // After the answer is painted: starting the audio device can take a moment.
    setTimeout(function () { feedback(kind); }, 0);
  }

  // --- sound and vibration: eyes on the queue, not on the screen -----------------------------

  var audio = null;

  function feedback(kind) {
    var admitted = kind === "admitted";
    if (!admitted && kind !== "refused" && kind !== "used") return;
    try {
      if (navigator.vibrate) navigator.vibrate(admitted ? 80 : [200, 100, 200]);
    } catch (e) { /* not on this device */ }
    try {
      var Context = window.AudioContext || window.webkitAudioContext;
      if (!Context) return;
      audio = audio || new Context();
      if (audio.state === "suspended") audio.resume();
      var tone = audio.createOscillator(), gain = audio.createGain(), now = audio.currentTime;
      tone.type = admitted ? "sine" : "square";
      tone.frequency.value = admitted ? 880 : 220;
      gain.gain.setValueAtTime(0.2, now);
      gain.gain.exponentialRampToValueAtTime(0.001, now + (admitted ? 0.15 : 0.45));
      tone.connect(gain).connect(audio.destination);
      tone.start(now);
      tone.stop(now + (admitted ? 0.15 : 0.45));
    } catch (e) { /* no sound: the colour still says it */ }
  }

  function holder(ticket) {
    return ticket ? (ticket.firstname + " " + ticket.lastname).trim() : "";
  }

  // --- the API token ------------------------------------------------------------------------

  var tokenRequest = null;

  // A request that does not answer within `ms` counts as no network: at the door a slow
  // answer is as bad as none.
  function timedFetch(url, init, ms) {
    if (!ms || !window.AbortController) return fetch(url, init);
    var controller = new AbortController();
    var timer = setTimeout(function () { controller.abort(); }, ms);
    init.signal = controller.signal;
    return fetch(url, init).finally(function () { clearTimeout(timer); });
  }

  function freshToken(ms) {
    if (token && Date.now() < token.renewAt) return Promise.resolve(token.value);
    if (tokenRequest) return tokenRequest;  // one request for all the calls that wait on it
    tokenRequest = timedFetch(config.token_url, {
      method: "POST", credentials: "same-origin", redirect: "manual",  // to the login page: signed out
      headers: { "X-CSRFToken": csrf, "Accept": "application/json" },
    }, ms).then(function (response) {
      if (!response.ok) throw new Error("session");
      return response.json();
    }).then(function (body) {
      // Renewed at four fifths of its life: a scan never waits on an expired token.
      token = { value: body.access_token, renewAt: Date.now() + body.expires_in * 800 };
      return token.value;
    }).finally(function () { tokenRequest = null; });
    return tokenRequest;
  }

  function api(method, path, body, retried, ms) {
    return freshToken(ms).then(function (value) {
      var init = { method: method, headers: { "Authorization": "Bearer " + value, "Accept": "application/json" } };
      if (body) {
        init.headers["Content-Type"] = "application/json";
        init.body = JSON.stringify(body);
      }
      return timedFetch(config.api + path, init, ms);
    }).then(function (response) {
      if (response.status === 401 && !retried) {
        token = null;  // revoked or expired early: one new token, one retry
        return api(method, path, body, true, ms);
      }
      return response.json().then(function (data) {
        return { status: response.status, data: data, headers: response.headers };
      });
    });
  }

  function eventPath(event) {
    return "/organizers/" + event.organizer_id + "/events/" + event.id;
  }

  // --- scanning -----------------------------------------------------------------------------

  function typeIds(event) {
    return event.check_in_types.length ? [Number(els.type.value)] : undefined;
  }

  var signed = window.checkinSigned;

  function scan(code) {
    code = (code || "").trim();
    // A signed code (CONTRACT §14) is base64url: its case matters; a printed code's does not.
    if (!signed.isSigned(code)) code = code.toUpperCase();
    var event = currentEvent();
    if (!code || closed) return;
    if (!event) { show("refused", L.refused, "", L.pick_event); return; }
    if (event.check_in_types.length && !els.type.value) { show("refused", L.refused, "", L.pick_type); return; }
    var gate = gateName();
    if (!gate) { show("refused", L.refused, "", L.name_gate); els.gate.focus(); return; }
    if (busy) return;
    setBusy(true);
    var started = performance.now();
    var done = function () {
      setBusy(false);
      refreshCounts();
      syncSoon();
    };
    var undecided = function (error) {
      notDecided(started, error);
      done();
    };
    if (net.offline) {
      decideOffline(event, code, started).then(done, undecided);
      return;
    }
    // Admitted here while offline and not yet uploaded: the server does not know it yet.
    var mine = pendingAdmits[admitKey(event.id, code, typeIds(event))];
    if (mine) {
      showUsedHere(code, mine);
      done();
      return;
    }
    // Past the timeout the door is answered from the copy, but the request is left to finish: if
    // the server admitted after all, the scan queued meanwhile is settled. The scan keeps its id
    // (§7) whichever way it goes: asked again, queued or uploaded, it is applied once.
    var decided = false, queued = null, id = scanId();
    var body = { reference_code: code, check_in_type_ids: typeIds(event), note: gate, scan_id: id };
    var timer = setTimeout(function () {
      decided = true;
      markOffline();
      queued = decideOffline(event, code, started, id);
      queued.then(done, undecided);
    }, config.online_timeout_ms);
    retrying(function () {
      return api("POST", eventPath(event) + "/tickets/checkin", body, false, LATE_ANSWER_MS);
    }, function () { return !decided; })
      .then(function (r) {
        clearTimeout(timer);
        markOnline();
        if (!decided) {
          decided = true;
          explain(r, code, event);
          // The next scan waits until the copy holds this answer (§15): a network drop right
          // after must not let the same ticket in twice.
          copy.learn(event.id, r.status, r.data, "check_in").then(done, done);
          return;
        }
        queued.then(function (record) {
          return copy.learn(event.id, r.status, r.data, "check_in").catch(function () {}).then(function () {
            return r.status === 200 && r.data.success ? settleLate(record) : null;
          });
        }, function () { /* not decided here: the door was told so */ });
      })
      .catch(function (error) {
        clearTimeout(timer);
        if (decided) return;  // queued with its id: the upload asks again
        decided = true;
        if (error && error.message === "session") {
          show("refused", L.refused, "", L.session_over);
          done();
          return;
        }
        markOffline();
        decideOffline(event, code, started, id).then(done, undecided);
      });
  }

  // A scan the copy could not decide or show (the browser's storage failed) says so: the door is
  // never left without an answer, and scanning again asks the copy afresh (an admission it did
  // store is then "already used by this device").
  function notDecided(started, error) {
    if (window.console) console.error("scan not decided:", error);
    show("refused", L.refused, "", L.not_decided);
    els.result.dataset.decidedMs = (performance.now() - started).toFixed(1);
  }

  // A lost answer (a dropped connection, a restarted server, a 5xx) is asked again with the same
  // body, scan id included, while `wanted()`: the server applies a scan id once and
  // answers a repeat with its first answer (`replayed: true`), so the door hears "admitted", not
  // "already used" for its own admission. The first retry goes at once: a connection that
  // dropped is usually a fresh one away.
  var RETRY_AFTER_MS = [0, 250, 750];

  function later(ms) {
    return ms ? new Promise(function (resolve) { setTimeout(resolve, ms); }) : Promise.resolve();
  }

  function retrying(send, wanted, tries) {
    tries = tries || 0;
    var more = function () { return tries < RETRY_AFTER_MS.length && wanted(); };
    return send().then(function (r) {
      // Not the scan's answer (nothing was stored for its id): past the retries, the scan is
      // decided from the copy as with no network, and its upload asks again.
      if (r.status >= 500) throw new Error("lost");
      return r;
    }).catch(function (error) {
      if ((error && error.message === "session") || !more()) throw error;
      return later(RETRY_AFTER_MS[tries]).then(function () {
        if (!wanted()) throw error;
        return retrying(send, wanted, tries + 1);
      });
    });
  }

  // While a scan or an undo is under way the page takes no other (aria-busy tells assistive
  // technology, and tests, when the answer is complete).
  function setBusy(on) {
    busy = on;
    els.result.classList.toggle("result-busy", on);
    if (on) els.result.setAttribute("aria-busy", "true");
    else els.result.removeAttribute("aria-busy");
  }

  var LATE_ANSWER_MS = 30000;

  // The server admitted a scan the page had already decided and queued: nothing to upload.
  function settleLate(record) {
    if (!record || record.state !== "pending") return null;
    return transaction(["scans"], "readwrite", function (s) {
      return req(s.scans.get(record.id)).then(function (stored) {
        if (stored && stored.state === "pending") {
          stored.state = "done";
          stored.reason = "admitted online, answer late";
          s.scans.put(stored);
        }
      });
    }).then(refreshQueue);
  }

  function explain(r, code, event) {
    var d = r.data, ticket = d.ticket;
    var type = ticket && ticket.ticket_type ? ticket.ticket_type.name : "";
    if (r.status === 200) {
      var result = (d.check_in_results || [])[0];
      if (d.success) {
        admittedHere[code] = result ? result.used_at : ticket.used_at;
        lastAdmission = { ticketId: ticket.id, name: holder(ticket), typeIds: typeIds(event) };
        els.undo.textContent = L.undo + ": " + lastAdmission.name;
        els.undo.hidden = false;
        show("admitted", L.admitted, holder(ticket), type + (result ? " · " + result.check_in_type_name : ""));
      } else if (result && result.used_at) {
        showUsed(event, code, ticket, result.used_at, type + " · " + result.check_in_type_name, result.check_in_type_id);
      } else {
        show("refused", L.refused, holder(ticket), result ? result.error : d.message);
      }
      return;
    }
    var error = d.error;
    if (error === "ticket_already_used") showUsed(event, code, ticket, ticket.used_at, type, null);
    else if (error === "ticket_revoked") show("refused", L.revoked, holder(ticket), ticket.revoke_note || type);
    else if (error === "order_not_paid") show("refused", L.not_paid, holder(ticket), type);
    else if (error === "not_found") show("refused", L.not_found, code, fill(L.not_found_detail, { code: code }));
    else if (error === "not_organizer_member" || error === "organizer_mismatch") show("refused", L.not_allowed, "", d.message);
    else if (error === "rate_limited") show("refused", L.wait, "", d.message);
    else show("refused", L.refused, holder(ticket), d.message);
  }

  // When, and by whom: the API's answer says when; the audit log (read through this site, for
  // the user's own organizers) says who. Until it answers, this device knows its own scans.
  function showUsed(event, code, ticket, usedAt, what, typeId) {
    var when = fill(L.used_at, { time: localTime(usedAt) });
    var guess = admittedHere[code] === usedAt ? L.by_this_device : L.by_another;
    show("used", L.already_used, holder(ticket), what + " · " + when + " (" + guess + ")");
    var mine = shown;
    var query = "?event_id=" + event.id + "&ticket_id=" + ticket.id + (typeId ? "&check_in_type_id=" + typeId : "");
    fetch(config.last_check_in_url + query, { credentials: "same-origin", headers: { "Accept": "application/json" } })
      .then(function (response) { return response.ok ? response.json() : null; })
      .then(function (found) {
        if (found && found.by && mine === shown) {
          els.detail.textContent = what + " · " + when + " (" + fill(L.by, { who: found.by }) + ")";
        }
      })
      .catch(function () {});
  }

  function undo() {
    var event = currentEvent(), last = lastAdmission;
    if (!event || !last || busy || closed) return;
    setBusy(true);
    var done = function () { setBusy(false); refreshCounts(); syncSoon(); };
    var undone = function (offline) {
      lastAdmission = null;
      els.undo.hidden = true;
      show("undone", L.undone, last.name, fill(L.undone_detail, { name: last.name }), offline);
    };
    var id = scanId(), began = performance.now();
    var offline = function () {
      return undoOffline(event, last, id).then(function () { undone(true); }, function () {
        show("refused", L.offline, last.name, L.offline_detail);
      });
    };
    if (net.offline || last.offline) {
      // An admission still in the queue is undone in the queue: a renew follows it, in order.
      offline().then(done, done);
      return;
    }
    // Asked again with its scan id while the door can wait; then undone offline, still with it.
    var body = { ticket_id: last.ticketId, check_in_type_ids: last.typeIds, note: gateName(), scan_id: id };
    retrying(function () {
      return api("POST", eventPath(event) + "/tickets/renew", body, false, config.online_timeout_ms);
    }, function () { return performance.now() - began < config.online_timeout_ms; })
      .then(function (r) {
        markOnline();
        if (r.status === 200) undone(false);
        else show("refused", L.refused, last.name, r.data.message);
        copy.learn(event.id, r.status, r.data, "renew").then(done, done);
      })
      .catch(function (error) {
        if (error && error.message === "session") { show("refused", L.refused, "", L.session_over); done(); return; }
        markOffline();
        offline().then(done, done);
      });
  }

  // --- the local copy and the queue (IndexedDB, offline_copy.js) ------------------------------

  var copy = window.checkinCopy;
  copy.use(me);
  var transaction = copy.transaction, req = copy.req, allScans = copy.allScans;

  var seqBase = Date.now() * 1000, seqNext = 0;

  function scanId() {
    if (window.crypto && crypto.randomUUID) return crypto.randomUUID();
    var bytes = crypto.getRandomValues(new Uint8Array(16));
    return Array.prototype.map.call(bytes, function (b) { return (b + 256).toString(16).slice(1); }).join("");
  }

  // --- network state ---------------------------------------------------------------------------

  var OFFLINE_SINCE_KEY = "checkin.offlineSince";
  var net = { offline: !navigator.onLine || !!localStorage.getItem(OFFLINE_SINCE_KEY) };
  var state = { waiting: 0, copying: null, sessionOver: false };
  var pendingAdmits = {};  // event|code|type -> used_at, for admissions queued and not yet uploaded
  var clockFormat = new Intl.DateTimeFormat(config.locale, { timeZone: config.time_zone, timeStyle: "short" });

  function markOffline() {
    if (!localStorage.getItem(OFFLINE_SINCE_KEY)) localStorage.setItem(OFFLINE_SINCE_KEY, new Date().toISOString());
    var was = net.offline;
    net.offline = true;
    renderFreshness();
    if (!was) refreshCounts();
  }

  // Called by every request that got an answer: back online, the counts are the server's at
  // once, not at their next refresh (unless they are what just answered). An answer to a request
  // sent before the browser said "offline" does not undo it: that word is believed.
  function markOnline(countsAnswered) {
    if (navigator.onLine === false) return;
    var was = net.offline;
    net.offline = false;
    localStorage.removeItem(OFFLINE_SINCE_KEY);
    if (!was) return;
    renderFreshness();
    if (!countsAnswered) refreshCounts();
    syncSoon();
  }

  function admitKey(eventId, code, types) {
    return eventId + "|" + code + "|" + (types ? types.join(",") : "");
  }

  // --- deciding offline (§11's rules for scanners) ----------------------------------------------

  function decideOffline(event, code, started, id) {
    var types = typeIds(event), typeId = types ? types[0] : null;
    var usedAt = new Date().toISOString();
    var outcome = null, record = null;
    return vouched(event, code).then(function (payload) {
      return transaction(["tickets", "feeds", "scans"], "readwrite", function (s) {
        return Promise.all([
          req(s.tickets.index("code").get([event.id, signed.referenceCode(code)])),
          req(s.feeds.get(event.id)),
          payload ? req(s.tickets.get([event.id, payload.t])) : null,
        ]).then(function (found) {
          var feed = found[1];
          var ticket = found[0] || found[2] || (payload ? copy.fromSignedCode(event.id, payload, feed) : null);
          outcome = copy.offlineRule(ticket, typeId);
          record = {
            id: id || scanId(), seq: seqBase + seqNext++, author: me, event_id: event.id, organizer_id: event.organizer_id,
            action: "check_in", reference_code: code, ticket_id: ticket ? ticket.id : null,
            check_in_type_ids: types || null, used_at: usedAt,
            // A ticket known only by its signed code is shown by what the code carries.
            name: holder(ticket) || (ticket && ticket.vouched ? ticket.reference_code : ""),
            ticket_type: ticket ? ticket.ticket_type_name : "", outcome: outcome.kind,
            previous_used_at: outcome.usedAt || null, state: outcome.kind === "admitted" ? "pending" : "local",
            complete_copy: !!(feed && feed.complete), note: gateName(),
          };
          s.scans.put(record);
          if (outcome.kind === "admitted") {
            ticket.status = "used";
            ticket.used_at = ticket.used_at || usedAt;
            if (typeId && ticket.checked_in_type_ids.indexOf(typeId) < 0) ticket.checked_in_type_ids.push(typeId);
            s.tickets.put(ticket);
          }
        });
      });
    }).then(function () {
      if (record.state === "pending") {
        pendingAdmits[admitKey(event.id, code, types)] = usedAt;
        lastAdmission = { ticketId: record.ticket_id, name: record.name, typeIds: types, offline: true };
        els.undo.textContent = L.undo + ": " + record.name;
        els.undo.hidden = false;
      }
      showDecision(event, record, outcome);
      els.result.dataset.decidedMs = (performance.now() - started).toFixed(1);
      return refreshQueue().then(function () { return record; });
    });
  }

  // A signed code (§14) of a ticket the copy lacks, sold after its last sync: its payload when it
  // verifies with a key of the event's feed and names this event, else null (then the copy
  // decides, and finds nothing: not found). Read before the scan's transaction, which cannot
  // wait on WebCrypto.
  function vouched(event, code) {
    if (!signed.isSigned(code)) return Promise.resolve(null);
    return transaction(["tickets", "feeds"], "readonly", function (s) {
      return Promise.all([
        req(s.tickets.index("code").get([event.id, signed.referenceCode(code)])),
        req(s.feeds.get(event.id)),
      ]);
    }).then(function (found) {
      return found[0] ? null : signed.verify(code, found[1] ? found[1].keys : [], event);
    });
  }

  function showDecision(event, record, outcome) {
    var typeName = "";
    if (record.check_in_type_ids) {
      event.check_in_types.forEach(function (t) { if (t.id === record.check_in_type_ids[0]) typeName = t.name; });
    }
    var what = record.ticket_type + (typeName ? " · " + typeName : "");
    if (outcome.kind === "admitted") show("admitted", L.admitted, record.name, what, true);
    else if (outcome.kind === "used") {
      var here = pendingAdmits[admitKey(event.id, record.reference_code, record.check_in_type_ids)];
      show("used", L.already_used, record.name,
           what + " · " + fill(L.used_at, { time: localTime(here || outcome.usedAt) }) +
           (here ? " (" + L.by_this_device + ")" : ""), true);
    } else if (outcome.kind === "revoked") show("refused", L.revoked, record.name, what, true);
    else if (outcome.kind === "not_paid") show("refused", L.not_paid, record.name, what, true);
    else {
      var detail = fill(L.not_found_detail, { code: record.reference_code });
      show("refused", L.not_found, record.reference_code, record.complete_copy ? detail : detail + " " + L.no_copy, true);
    }
  }

  function showUsedHere(code, usedAt) {
    show("used", L.already_used, code, fill(L.used_at, { time: localTime(usedAt) }) + " (" + L.by_this_device + ")", net.offline);
  }

  function undoOffline(event, last, id) {
    var record = {
      id: id || scanId(), seq: seqBase + seqNext++, author: me, event_id: event.id, organizer_id: event.organizer_id,
      action: "renew", reference_code: null, ticket_id: last.ticketId, check_in_type_ids: last.typeIds || null,
      used_at: new Date().toISOString(), name: last.name, ticket_type: "", outcome: "undone", state: "pending",
      note: gateName(),
    };
    return transaction(["tickets", "scans"], "readwrite", function (s) {
      s.scans.put(record);
      return req(s.tickets.get([event.id, last.ticketId])).then(function (ticket) {
        if (!ticket) return;
        var typeId = last.typeIds ? last.typeIds[0] : null;
        if (typeId) ticket.checked_in_type_ids = ticket.checked_in_type_ids.filter(function (t) { return t !== typeId; });
        if (!typeId || !ticket.checked_in_type_ids.length) { ticket.status = "active"; ticket.used_at = null; }
        s.tickets.put(ticket);
        delete pendingAdmits[admitKey(event.id, ticket.reference_code.toUpperCase(), last.typeIds)];
      });
    }).then(refreshQueue);
  }

  // --- the queue: what waits, what the server refused -------------------------------------------

  function refreshQueue() {
    return allScans().then(function (scans) {
      var event = currentEvent();
      var waiting = 0, conflicts = [];
      scans = scans.filter(mine);
      scans.forEach(function (scan) {
        if (scan.state === "pending") waiting += 1;
        if (scan.state === "conflict" && event && scan.event_id === event.id) conflicts.push(scan);
      });
      pendingAdmits = admittedStill(scans);
      state.waiting = waiting;
      renderConflicts(conflicts);
      renderFreshness();
    });
  }

  // Only the signed-in member's scans are theirs to see and to upload (§15).
  function mine(scan) {
    return scan.author === me;
  }

  function admittedStill(scans) {
    var open = {}, byTicket = {};
    scans.forEach(function (scan) {
      if (scan.state !== "pending") return;
      if (scan.action === "check_in") {
        var key = admitKey(scan.event_id, scan.reference_code, scan.check_in_type_ids);
        open[key] = scan.used_at;
        byTicket[scan.event_id + "|" + scan.ticket_id + "|" + (scan.check_in_type_ids || []).join(",")] = key;
      } else {
        var admitted = byTicket[scan.event_id + "|" + scan.ticket_id + "|" + (scan.check_in_type_ids || []).join(",")];
        if (admitted) delete open[admitted];
      }
    });
    return open;
  }

  // A refusal after the fact in the page's words, by its code: the API's message is English and
  // carries a raw timestamp.
  var REFUSED_AS = {
    ticket_already_used: "already_used", ticket_revoked: "revoked", order_not_paid: "not_paid",
    not_found: "not_found", ticket_not_used: "not_checked_in", not_organizer_member: "not_allowed",
  };

  function refusal(scan) {
    var words = L[REFUSED_AS[scan.error]] || L.refused;
    if (scan.error === "ticket_already_used" && scan.server_used_at) {
      words += " · " + fill(L.used_at, { time: localTime(scan.server_used_at) });
    }
    return words;
  }

  function renderConflicts(conflicts) {
    els.conflictList.textContent = "";
    conflicts.slice().reverse().slice(0, 100).forEach(function (scan) {
      var item = document.createElement("li");
      var who = document.createElement("strong");
      who.textContent = scan.name || scan.reference_code || "";
      item.appendChild(who);
      item.appendChild(document.createTextNode(
        " · " + refusal(scan) + " · " + (scan.reference_code || "") + " · " + localTime(scan.used_at)));
      item.dataset.error = scan.error || "";
      els.conflictList.appendChild(item);
    });
    els.conflicts.hidden = !conflicts.length;
  }

  function renderFreshness() {
    var event = currentEvent(), parts = [], kind = "fresh";
    if (!event || closed) { els.freshness.hidden = true; return; }
    var feed = feeds[event.id];
    if (state.copying !== null) {
      kind = "copying";
      parts.push(fill(L.copying, { count: state.copying.toLocaleString(config.locale) }));
    } else if (net.offline) {
      kind = "offline";
      var since = localStorage.getItem(OFFLINE_SINCE_KEY);
      parts.push(fill(L.offline_since, { time: clockFormat.format(since ? new Date(since) : new Date()) }));
    } else if (state.waiting) {
      kind = "uploading";
      parts.push(fill(L.uploading, { count: state.waiting }));
    } else if (feed && feed.complete) {
      parts.push(fill(L.up_to_date, { time: clockFormat.format(new Date(feed.synced_at)) }));
    }
    if (!feed || !feed.complete) { if (state.copying === null) { parts.push(L.no_copy); kind = kind === "fresh" ? "stale" : kind; } }
    else if (state.copying === null) parts.push(fill(L.copy_ready, { count: feed.count.toLocaleString(config.locale) }));
    if (net.offline || state.waiting) parts.push(fill(L.waiting, { count: state.waiting }));
    if (state.sessionOver && state.waiting) parts.push(L.session_later);
    els.freshness.textContent = parts.join(" · ");
    els.freshness.className = "freshness freshness-" + kind;
    els.freshness.dataset.waiting = String(state.waiting);
    els.freshness.dataset.state = kind;
    els.freshness.hidden = false;
  }

  // --- keeping the copy fresh: the sync feed, by cursor ------------------------------------------

  var feeds = {};  // event id -> its feeds record, as last stored
  var syncing = null;
  var syncTimer = null;
  var SYNC_EVERY_MS = 5000;

  function loadFeed(event) {
    return transaction(["feeds"], "readonly", function (s) { return req(s.feeds.get(event.id)); })
      .then(function (feed) { if (feed) feeds[event.id] = feed; return feed; });
  }

  // Pages are fetched one after another by cursor; each is stored while the next is on its way,
  // and the cursor is stored with its page, so an interrupted copy resumes where it stopped.
  function syncEvent(event) {
    var feed = feeds[event.id] || { event_id: event.id, cursor: null, complete: false, count: 0, synced_at: null };
    var stored = Promise.resolve();
    var ofEvent = IDBKeyRange.bound([event.id, -Infinity], [event.id, Infinity]);
    var store = function (data, mark) {
      return transaction(["tickets", "feeds"], "readwrite", function (s) {
        copy.storeFeedTickets(s.tickets, event.id, data.tickets, mark);
        return req(s.tickets.count(ofEvent)).then(function (count) {
          feed = {
            event_id: event.id, cursor: data.next_cursor, count: count,
            complete: feed.complete || !data.has_more,
            synced_at: data.has_more ? feed.synced_at : new Date().toISOString(),
            // The event's signing keys as of this page (a retired one is gone), and the names
            // of its ticket types: what an offline scan of a signed code needs (§14).
            keys: data.keys || feed.keys || [],
            types: copy.typeNames(feed.types, data.tickets),
          };
          s.feeds.put(feed);
        });
      }).then(function () {
        feeds[event.id] = feed;
        if (!feed.complete) { state.copying = feed.count; renderFreshness(); }
      });
    };
    var page = function (cursor) {
      var query = "?limit=" + config.sync_limit + (cursor ? "&cursor=" + encodeURIComponent(cursor) : "");
      var mark = copy.feedMark();
      return api("GET", eventPath(event) + "/tickets/sync" + query, null, false, 30000).then(function (r) {
        if (r.status === 400 && cursor) return page(null);  // a cursor it no longer issues: start over
        if (r.status !== 200) throw new Error("sync " + r.status);
        markOnline();
        stored = stored.then(function () { return store(r.data, mark); });
        return r.data.has_more ? page(r.data.next_cursor) : stored;
      });
    };
    return page(feed.cursor).then(function () {
      return stored;
    }).then(function () {
      state.copying = null;
      renderFreshness();
    }, function (error) {
      state.copying = null;
      throw error;
    });
  }

  // Upload what waits, then pull what changed; on no network, the page is offline until it works.
  function refresh() {
    var event = currentEvent();
    if (syncing) return syncing;
    syncing = upload().then(function () { return event ? syncEvent(event) : null; })
      .then(function () { state.sessionOver = false; }, function (error) {
        if (error && error.message === "session") state.sessionOver = true;
        else if (!error || String(error.message).indexOf("sync ") !== 0) markOffline();
      })
      .then(function () { syncing = null; renderFreshness(); });
    return syncing;
  }

  function syncSoon() {
    clearTimeout(syncTimer);
    if (closed) return;
    syncTimer = setTimeout(loop, 300);
  }

  function loop() {
    clearTimeout(syncTimer);
    if (closed) return;
    refresh().then(function () {
      if (closed) return;
      clearTimeout(syncTimer);
      syncTimer = setTimeout(loop, SYNC_EVERY_MS);
    });
  }

  // --- uploading the queue: the batch endpoint, in order, idempotent by scan id --------------------

  var BATCH = 500;

  function upload() {
    return allScans().then(function (scans) {
      // A scan whose online request is still out goes up too: both carry its scan id, and the
      // server applies it once, whichever comes first (§7).
      var pending = scans.filter(function (scan) { return scan.state === "pending" && mine(scan); });
      if (!pending.length) return null;
      state.waiting = pending.length;
      renderFreshness();
      // The server's counts now include what went up.
      return uploadFrom(pending).then(function () { refreshCounts(); });
    });
  }

  function uploadFrom(pending) {
    if (!pending.length) return refreshQueue();
    // One event per request, keeping the device's order.
    var first = pending[0], chunk = [];
    for (var i = 0; i < pending.length && chunk.length < BATCH; i++) {
      if (pending[i].event_id !== first.event_id) break;
      chunk.push(pending[i]);
    }
    var path = "/organizers/" + first.organizer_id + "/events/" + first.event_id + "/checkins";
    var body = { scans: chunk.map(function (scan) {
      var sent = { id: scan.id, action: scan.action, used_at: scan.used_at };
      if (scan.action === "renew" || !scan.reference_code) sent.ticket_id = scan.ticket_id;
      else sent.reference_code = scan.reference_code;
      if (scan.check_in_type_ids) sent.check_in_type_ids = scan.check_in_type_ids;
      if (scan.note) sent.note = scan.note;  // the gate it was scanned at (older scans have none)
      return sent;
    }) };
    return api("POST", path, body, false, 60000).then(function (r) {
      markOnline();
      var results = {};
      if (r.status === 200) {
        r.data.results.forEach(function (result) { results[result.id] = result; });
      } else if (r.status === 429 || r.status >= 500) {
        throw new Error("later");
      }
      return transaction(["scans"], "readwrite", function (s) {
        chunk.forEach(function (scan) {
          var result = results[scan.id];
          if (result && result.success) {
            scan.state = "done";
          } else {
            // The server's answer wins: refused after the fact, listed for the door manager.
            scan.state = "conflict";
            scan.error = result ? result.error : r.data.error;
            scan.server_used_at = result ? usedAtOf(result) : null;
            if (result && result.ticket) scan.name = holder(result.ticket) || scan.name;
          }
          s.scans.put(scan);
        });
      }).then(function () { return uploadFrom(pending.slice(chunk.length)); });
    });
  }

  // When the ticket (or, in multi mode, the refused type) was checked in, as the server says.
  function usedAtOf(result) {
    var type = (result.check_in_results || []).filter(function (t) { return !t.success && t.used_at; })[0];
    return type ? type.used_at : (result.ticket && result.ticket.used_at) || null;
  }

  function clearConflicts() {
    var event = currentEvent();
    if (!event) return;
    transaction(["scans"], "readwrite", function (s) {
      return req(s.scans.getAll()).then(function (scans) {
        scans.forEach(function (scan) {
          if (scan.state === "conflict" && scan.event_id === event.id && mine(scan)) { scan.state = "seen"; s.scans.put(scan); }
        });
      });
    }).then(refreshQueue);
  }

  // --- counts (CONTRACT §12), shown only while the endpoint answers --------------------------

  // Offline, the counts come from this device's copy (its own admissions included); per check-in
  // type they would need every ticket read, so they wait for the network.
  function localCounts(event) {
    if (event.check_in_types.length) { els.counts.hidden = true; return; }
    var range = function (status) { return IDBKeyRange.only([event.id, status]); };
    transaction(["tickets"], "readonly", function (s) {
      var index = s.tickets.index("status");
      return Promise.all([req(index.count(range("used"))), req(index.count(range("active")))]);
    }).then(function (counts) {
      if (!counts[0] && !counts[1]) { els.counts.hidden = true; return; }
      els.counts.textContent = fill(L.checked_in, { done: counts[0], total: counts[0] + counts[1] }) +
        " · " + L.offline_mark;
      els.counts.hidden = false;
    }, function () { els.counts.hidden = true; });
  }

  var countsAsked = 0;  // only the latest request's counts are shown: answers may cross

  // `tryNetwork`: ask the server even while offline (the browser says the network is back).
  function refreshCounts(tryNetwork) {
    var event = currentEvent();
    if (!event || closed) { els.counts.hidden = true; return; }
    var asked = ++countsAsked;
    if (net.offline && tryNetwork !== true) { localCounts(event); return; }
    api("GET", eventPath(event) + "/check_in_stats").then(function (r) {
      markOnline(true);
      if (asked !== countsAsked) return;
      if (r.status !== 200 || !r.data.tickets) { els.counts.hidden = true; return; }
      var t = r.data.tickets, done = t.used, total = t.active + t.used;
      if (event.check_in_types.length) {
        var id = Number(els.type.value);
        (r.data.check_in_types || []).forEach(function (c) { if (c.check_in_type_id === id) done = c.checked_in; });
      }
      els.counts.textContent = fill(L.checked_in, { done: done, total: total });
      els.counts.hidden = false;
    }).catch(function () { localCounts(event); });
  }

  // --- the camera ---------------------------------------------------------------------------

  var seen = { code: null, at: 0 };  // a code counts again only after it left the frame
  var LEFT_AFTER_MS = 800;
  var detect = null;

  // The browser's own BarcodeDetector where it reads QR codes; else zxing-cpp's WebAssembly
  // reader, script and .wasm both from this service (its default would fetch the .wasm from a
  // CDN). The video says which one reads it (data-decoder), for support and for the tests.
  function decoder() {
    if (detect) return Promise.resolve(detect);
    var native = window.BarcodeDetector
      ? window.BarcodeDetector.getSupportedFormats().catch(function () { return []; })
      : Promise.resolve([]);
    return native.then(function (formats) {
      if (formats.indexOf("qr_code") >= 0) {
        var detector = new window.BarcodeDetector({ formats: ["qr_code"] });
        detect = function (video) {
          return detector.detect(video).then(function (codes) { return codes.length ? codes[0].rawValue : null; });
        };
        els.video.dataset.decoder = "native";
        return detect;
      }
      return new Promise(function (resolve, reject) {
        var script = document.createElement("script");
        script.src = config.decoder_url;
        script.onload = resolve;
        script.onerror = reject;
        document.head.appendChild(script);
      }).then(function () {
        // Fetched and compiled now, so a missing or refused .wasm fails the camera start.
        return window.ZXingWASM.prepareZXingModule({
          overrides: {
            locateFile: function (path, prefix) {
              return /\.wasm$/.test(path) ? config.decoder_wasm_url : prefix + path;
            },
          },
          fireImmediately: true,
        });
      }).then(function () {
        var canvas = document.createElement("canvas");
        var context = canvas.getContext("2d", { willReadFrequently: true });
        var options = { formats: ["QRCode"], maxNumberOfSymbols: 1 };
        detect = function (video) {
          var scale = Math.min(1, 640 / video.videoWidth);
          canvas.width = Math.round(video.videoWidth * scale);
          canvas.height = Math.round(video.videoHeight * scale);
          context.drawImage(video, 0, 0, canvas.width, canvas.height);
          var image = context.getImageData(0, 0, canvas.width, canvas.height);
          return window.ZXingWASM.readBarcodes(image, options).then(function (codes) {
            return codes.length && codes[0].isValid ? codes[0].text : null;
          });
        };
        els.video.dataset.decoder = "zxing-wasm";
        return detect;
      });
    });
  }

  function tick() {
    if (!stream) return;
    var video = els.video;
    var next = function () { if (stream) setTimeout(tick, 120); };
    if (video.readyState < 2 || !video.videoWidth) { next(); return; }
    detect(video).then(function (code) {
      var now = Date.now();
      if (code) {
        var again = code === seen.code && now - seen.at < LEFT_AFTER_MS;
        seen = { code: code, at: now };
        if (!again && !busy) scan(code);
      }
    }).catch(function () {}).then(next);
  }

  var starting = false;

  function startCamera() {
    if (stream || starting) return;
    if (!navigator.mediaDevices || !navigator.mediaDevices.getUserMedia) {
      els.cameraStatus.textContent = L.camera_failed;
      return;
    }
    starting = true;
    navigator.mediaDevices.getUserMedia({ video: { facingMode: "environment" }, audio: false })
      .then(function (media) {
        stream = media;
        els.video.srcObject = media;
        els.video.classList.add("on");
        els.cameraStatus.textContent = L.camera_on;
        els.toggle.textContent = L.camera_stop;
        return els.video.play().then(decoder).then(tick);
      })
      .catch(function () {
        stopCamera();
        els.cameraStatus.textContent = L.camera_failed;
      })
      .then(function () { starting = false; });
  }

  function stopCamera() {
    if (stream) stream.getTracks().forEach(function (track) { track.stop(); });
    stream = null;
    els.video.srcObject = null;
    els.video.classList.remove("on");
    els.cameraStatus.textContent = L.camera_off;
    els.toggle.textContent = L.camera_start;
  }

  // --- wiring -------------------------------------------------------------------------------

  var EVENT_KEY = "checkin.event", TYPE_KEY = "checkin.type", GATE_KEY = "checkin.gate";

  // The gate's name, asked once on a device and kept in its storage: every scan carries it as
  // its note (CONTRACT §7, §11), which the event's dashboard counts by.
  function gateName() {
    return els.gate.value.trim();
  }

  var chosenEventId = null;  // the event the undo button belongs to

  function eventChosen() {
    var event = currentEvent();
    els.type.textContent = "";
    // Chosen again (the page's start-up finishing after a pick of the same event): the last
    // admission keeps its undo.
    if ((event ? event.id : null) !== chosenEventId) {
      lastAdmission = null;
      els.undo.hidden = true;
    }
    chosenEventId = event ? event.id : null;
    localStorage.setItem(EVENT_KEY, event ? String(event.id) : "");
    if (event && event.check_in_types.length) {
      // No type is preselected: a gate says which one it is before its first scan.
      var placeholder = document.createElement("option");
      placeholder.value = "";
      placeholder.textContent = L.pick_type;
      els.type.appendChild(placeholder);
      event.check_in_types.forEach(function (t) {
        var option = document.createElement("option");
        option.value = t.id;
        option.textContent = t.name;
        els.type.appendChild(option);
      });
      // The gate's own type, kept across reloads (the same gate, the same door).
      var kept = localStorage.getItem(TYPE_KEY);
      if (kept && event.check_in_types.some(function (t) { return String(t.id) === kept; })) els.type.value = kept;
    }
    els.typeRow.hidden = !(event && event.check_in_types.length);
    clearInterval(statsTimer);
    refreshCounts();
    refreshQueue();
    if (event) {
      loadFeed(event).then(function () { renderFreshness(); loop(); }, loop);
      statsTimer = setInterval(refreshCounts, 20000);
      startCamera();
      (gateName() ? els.code : els.gate).focus();
    } else {
      renderFreshness();
    }
  }

  // --- a device changes hands (§15) ---------------------------------------------------------

  // The sign-ins ended on this device, by their config.session: a page rendered for one of them
  // (from the worker's cache, or by a server the sign-out never reached) admits nobody.
  var ENDED_KEY = "checkin.endedSessions";
  var SIGN_OUT_UPLOAD_MS = 5000;  // sign-out waits this long for the queue to go up, no longer
  var SIGN_OUT_FORGET_MS = 5000;

  function endedSessions() {
    try { return JSON.parse(localStorage.getItem(ENDED_KEY) || "[]"); } catch (e) { return []; }
  }

  function within(ms, promise) {
    return new Promise(function (resolve) {
      var timer = setTimeout(resolve, ms);
      promise.catch(function () {}).then(function () { clearTimeout(timer); resolve(); });
    });
  }

  // The page stops taking scans and says why; nothing of the event stays on screen.
  function shutDown(message) {
    closed = true;
    clearTimeout(syncTimer);
    clearInterval(statsTimer);
    stopCamera();
    lastAdmission = null;
    document.querySelectorAll(".setup, .actions, .conflicts, .manual, .camera, .freshness")
      .forEach(function (section) { section.hidden = true; });
    els.result.className = "result result-refused";
    els.title.textContent = message;
    els.name.textContent = "";
    els.detail.textContent = "";
  }

  // The page as the worker keeps it carries this member's events: dropped from every cache of
  // the page (and the worker told, for a cache it fills later).
  function dropCachedPage() {
    var page = location.origin + config.worker_scope;
    if (navigator.serviceWorker && navigator.serviceWorker.controller) {
      navigator.serviceWorker.controller.postMessage({ type: "signed-out" });
    }
    if (!window.caches) return Promise.resolve();
    return caches.keys().then(function (names) {
      return Promise.all(names.filter(function (name) { return name.indexOf("checkin-page-") === 0; })
        .map(function (name) {
          return caches.open(name).then(function (cache) { return cache.delete(page, { ignoreSearch: true }); });
        }));
    });
  }

  // Nothing of the member's stays but their sealed scans; then the page says it is done
  // (data-signed-in="no" on <html>).
  function forget(userId) {
    return Promise.all([userId ? copy.seal(userId) : null, dropCachedPage()]).then(function () {
      document.documentElement.dataset.signedIn = "no";
    });
  }

  // Ends the sign-in on the server: online, by the form (on to the sign-in page); with no
  // network, as soon as it returns.
  function endSession() {
    if (!signOutForm) return;
    if (navigator.onLine === false) {
      window.addEventListener("online", endSessionInBackground, { once: true });
      return;
    }
    signOutForm.submit();
  }

  // A request, not a navigation: the page keeps its notice, where a navigation on a network
  // that drops again at once would leave the browser's own error page. Failed, it is sent
  // again at the network's next return (and the next page opened online ends the sign-in).
  function endSessionInBackground() {
    fetch(signOutForm.action, {
      method: "POST", body: new FormData(signOutForm), credentials: "same-origin",
      redirect: "manual",
    }).catch(function () {
      window.addEventListener("online", endSessionInBackground, { once: true });
    });
  }

  function signOut(e) {
    e.preventDefault();
    if (closed) return;
    // Recorded first: a page closed halfway through still admits nobody when opened again.
    var ended = endedSessions().concat([config.session]).slice(-20);
    localStorage.setItem(ENDED_KEY, JSON.stringify(ended));
    var upload_ = navigator.onLine === false ? Promise.resolve()
      : within(SIGN_OUT_UPLOAD_MS, (syncing || Promise.resolve()).catch(function () {}).then(upload));
    shutDown(L.signing_out);
    upload_.then(function () { return within(SIGN_OUT_FORGET_MS, forget(me)); }).then(function () {
      els.title.textContent = L.signed_out;
      endSession();
    });
  }

  if (signOutForm) signOutForm.addEventListener("submit", signOut);
  // Signed out in another tab of this device: this one stops admitting too.
  window.addEventListener("storage", function (e) {
    if (e.key === ENDED_KEY && !closed && endedSessions().indexOf(config.session) >= 0) {
      shutDown(L.signed_out);
    }
  });

  if (!me || !config.session || endedSessions().indexOf(config.session) >= 0) {
    // Nobody signed in, or a sign-in this device already ended: admit nobody, finish the job.
    shutDown(L.signed_out);
    forget(me).then(endSession);
    return;
  }

  els.event.addEventListener("change", eventChosen);
  els.type.addEventListener("change", function () {
    localStorage.setItem(TYPE_KEY, els.type.value);
    refreshCounts();
  });
  els.gate.value = localStorage.getItem(GATE_KEY) || "";
  els.gate.addEventListener("input", function () { localStorage.setItem(GATE_KEY, gateName()); });
  // Enter names the gate: back to the code field, where a USB scanner types.
  els.gate.addEventListener("change", function () { els.gate.value = gateName(); });
  els.gate.addEventListener("keydown", function (e) {
    if (e.key !== "Enter") return;
    e.preventDefault();
    els.gate.value = gateName();
    if (els.gate.value && currentEvent()) els.code.focus();
  });
  els.undo.addEventListener("click", undo);
  els.conflictsClear.addEventListener("click", clearConflicts);
  els.toggle.addEventListener("click", function () { if (stream) stopCamera(); else startCamera(); });
  // A USB or Bluetooth scanner types the code and presses Enter: the same as typing it.
  els.manual.addEventListener("submit", function (e) {
    e.preventDefault();
    scan(els.code.value);
    els.code.value = "";
    (gateName() ? els.code : els.gate).focus();
  });
  // The browser's word is a hint: "online" is tried at once, "offline" believed at once.
  window.addEventListener("online", function () { refreshCounts(true); loop(); });
  window.addEventListener("offline", markOffline);
  if (navigator.serviceWorker) {
    navigator.serviceWorker.register(config.worker_url, { scope: config.worker_scope }).catch(function () {});
  }

  var keptEvent = localStorage.getItem(EVENT_KEY);
  if (config.events.length === 1) {
    els.event.value = String(config.events[0].id);
  } else if (keptEvent && config.events.some(function (e) { return String(e.id) === keptEvent; })) {
    els.event.value = keptEvent;
  }
  // This member's sealed scans (from an earlier sign-in on this device) back in their queue;
  // another member's copy left behind (a session that ended without signing out) sealed.
  // The event is picked once they are: its first upload is then theirs in full.
  els.event.disabled = true;
  var ready = Promise.all([
    copy.unseal(me).catch(function () {}), copy.sealOthers(me).catch(function () {}),
    copy.retireLegacy().catch(function () {}),
  ]);
  ready.then(function () {
    els.event.disabled = false;
    document.documentElement.dataset.signedIn = "yes";
    if (els.event.value) {
      eventChosen();
    } else {
      // No event picked yet: scans queued earlier still go up (on page load, as promised).
      refreshQueue().then(loop);
    }
  });
})();
