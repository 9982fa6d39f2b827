/* The staff check-in page (CONTRACT §15): a client of the public API like any scanner app.
 *
 * Each scan is one small request (scan-by-code check-in, §7); counts come from §12's stats.
 * The API token is minted for the signed-in user by this site (POST token_url) and renewed
 * before it expires, so the API's access rules (§3) apply to the page unchanged.
 * No framework, no build step, nothing from another site.
 */
(function () {
  "use strict";

  var config = JSON.parse(document.getElementById("checkin-config").textContent);
  var L = config.labels;
  var csrf = document.querySelector('meta[name="csrf-token"]').content;
  var $ = function (id) { return document.getElementById(id); };
  var els = {
    event: $("event"), typeRow: $("type-row"), type: $("check-in-type"),
    result: $("result"), title: $("result-title"), name: $("result-name"),
    detail: $("result-detail"), undo: $("undo"), counts: $("counts"),
    manual: $("manual"), code: $("code"), toggle: $("camera-toggle"),
    cameraStatus: $("camera-status"), video: $("video"),
  };

  var token = null;          // {value, renewAt}
  var lastAdmission = null;  // {ticketId, name, typeId}
  var admittedHere = {};     // reference code -> time this device admitted it
  var busy = false;
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

  function show(kind, title, name, detail) {
    shown += 1;
    els.result.className = "result result-" + kind;
    els.title.textContent = title;
    els.name.textContent = name || "";
    els.detail.textContent = detail || "";
  }

  function holder(ticket) {
    return ticket ? (ticket.firstname + " " + ticket.lastname).trim() : "";
  }

  // --- the API token ------------------------------------------------------------------------

  var tokenRequest = null;

  function freshToken() {
    if (token && Date.now() < token.renewAt) return Promise.resolve(token.value);
    if (tokenRequest) return tokenRequest;  // one request for all the calls that wait on it
    tokenRequest = fetch(config.token_url, {
      method: "POST", credentials: "same-origin", redirect: "manual",  // to the login page: signed out
      headers: { "X-CSRFToken": csrf, "Accept": "application/json" },
    }).then(function (response) {
      if (!response.ok) throw new Error("session");
      return response.json();
    }).then(function (body) {
      // Renewed at four fifths of its life: a scan never waits on an expired token.
      token = { value: body.access_token, renewAt: Date.now() + body.expires_in * 800 };
      return token.value;
    }).finally(function () { tokenRequest = null; });
    return tokenRequest;
  }

  function api(method, path, body, retried) {
    return freshToken().then(function (value) {
      var init = { method: method, headers: { "Authorization": "Bearer " + value, "Accept": "application/json" } };
      if (body) {
        init.headers["Content-Type"] = "application/json";
        init.body = JSON.stringify(body);
      }
      return fetch(config.api + path, init);
    }).then(function (response) {
      if (response.status === 401 && !retried) {
        token = null;  // revoked or expired early: one new token, one retry
        return api(method, path, body, true);
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

  function scan(code) {
    code = (code || "").trim().toUpperCase();
    var event = currentEvent();
    if (!code) return;
    if (!event) { show("refused", L.refused, "", L.pick_event); return; }
    if (event.check_in_types.length && !els.type.value) { show("refused", L.refused, "", L.pick_type); return; }
    if (busy) return;
    busy = true;
    els.result.classList.add("result-busy");
    api("POST", eventPath(event) + "/tickets/checkin", { reference_code: code, check_in_type_ids: typeIds(event) })
      .then(function (r) { explain(r, code, event); })
      .catch(function (error) {
        if (error && error.message === "session") show("refused", L.refused, "", L.session_over);
        else show("refused", L.offline, code, L.offline_detail);
      })
      .then(function () {
        busy = false;
        els.result.classList.remove("result-busy");
        refreshCounts();
      });
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
    if (!event || !last || busy) return;
    busy = true;
    api("POST", eventPath(event) + "/tickets/renew", { ticket_id: last.ticketId, check_in_type_ids: last.typeIds })
      .then(function (r) {
        if (r.status === 200) {
          lastAdmission = null;
          els.undo.hidden = true;
          show("undone", L.undone, last.name, fill(L.undone_detail, { name: last.name }));
        } else {
          show("refused", L.refused, last.name, r.data.message);
        }
      })
      .catch(function () { show("refused", L.offline, last.name, L.offline_detail); })
      .then(function () { busy = false; refreshCounts(); });
  }

  // --- counts (CONTRACT §12), shown only while the endpoint answers --------------------------

  function refreshCounts() {
    var event = currentEvent();
    if (!event) { els.counts.hidden = true; return; }
    api("GET", eventPath(event) + "/check_in_stats").then(function (r) {
      if (r.status !== 200 || !r.data.tickets) { els.counts.hidden = true; return; }
      var t = r.data.tickets, done = t.used, total = t.active + t.used;
      if (event.check_in_types.length) {
        var id = Number(els.type.value);
        (r.data.check_in_types || []).forEach(function (c) { if (c.check_in_type_id === id) done = c.checked_in; });
      }
      els.counts.textContent = fill(L.checked_in, { done: done, total: total });
      els.counts.hidden = false;
    }).catch(function () { els.counts.hidden = true; });
  }

  // --- the camera ---------------------------------------------------------------------------

  var seen = { code: null, at: 0 };  // a code counts again only after it left the frame
  var LEFT_AFTER_MS = 800;
  var detect = null;

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
        return detect;
      }
      return new Promise(function (resolve, reject) {
        var script = document.createElement("script");
        script.src = config.decoder_url;
        script.onload = resolve;
        script.onerror = reject;
        document.head.appendChild(script);
      }).then(function () {
        var canvas = document.createElement("canvas");
        var context = canvas.getContext("2d", { willReadFrequently: true });
        detect = function (video) {
          var scale = Math.min(1, 640 / video.videoWidth);
          canvas.width = Math.round(video.videoWidth * scale);
          canvas.height = Math.round(video.videoHeight * scale);
          context.drawImage(video, 0, 0, canvas.width, canvas.height);
          var image = context.getImageData(0, 0, canvas.width, canvas.height);
          var found = window.jsQR(image.data, image.width, image.height, { inversionAttempts: "dontInvert" });
          return Promise.resolve(found ? found.data : null);
        };
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

  function eventChosen() {
    var event = currentEvent();
    els.type.textContent = "";
    lastAdmission = null;
    els.undo.hidden = true;
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
    }
    els.typeRow.hidden = !(event && event.check_in_types.length);
    clearInterval(statsTimer);
    refreshCounts();
    if (event) {
      statsTimer = setInterval(refreshCounts, 20000);
      startCamera();
      els.code.focus();
    }
  }

  els.event.addEventListener("change", eventChosen);
  els.type.addEventListener("change", refreshCounts);
  els.undo.addEventListener("click", undo);
  els.toggle.addEventListener("click", function () { if (stream) stopCamera(); else startCamera(); });
  // A USB or Bluetooth scanner types the code and presses Enter: the same as typing it.
  els.manual.addEventListener("submit", function (e) {
    e.preventDefault();
    scan(els.code.value);
    els.code.value = "";
    els.code.focus();
  });
  if (config.events.length === 1) {
    els.event.value = String(config.events[0].id);
    eventChosen();
  }
})();
