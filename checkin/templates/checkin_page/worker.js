/* The check-in page's service worker (CONTRACT §15): the page opens with no network once it has
 * been opened online on this device.
 *
 * The page itself: from the network while it answers (it carries the user's events and a fresh
 * CSRF token), from the cache when it does not. Its assets: from the cache, refilled at each new
 * version of this worker (the version is a digest of the assets). The API is never cached: the
 * page keeps its own copy of the event in IndexedDB and decides scans from it.
 *
 * The cached page is the signed-in member's (it lists their events): it is dropped when the page
 * says the member signed out, and when the server answers the page with a sign-in redirect or a
 * refusal. With no network and no cached page, a short notice is shown: nobody is signed in,
 * nobody is admitted (CONTRACT §15: a device changes hands).
 */
"use strict";

var VERSION = "{{ version }}";
var CACHE = "checkin-page-" + VERSION;
var PAGE = {{ page_url|safe }};
var ASSETS = {{ assets|safe }};
var PAGE_TIMEOUT_MS = 4000;
var SIGNED_OUT = {{ signed_out|safe }};

self.addEventListener("install", function (event) {
  event.waitUntil(
    caches.open(CACHE).then(function (cache) {
      return cache.addAll(ASSETS).then(function () {
        // The page needs the session: fetched with its cookie, kept only if it is the page.
        return fetch(PAGE, { credentials: "same-origin", redirect: "manual" }).then(function (response) {
          if (response.ok && response.type === "basic") return cache.put(PAGE, response);
        }).catch(function () {});
      });
    }).then(function () { return self.skipWaiting(); })
  );
});

self.addEventListener("activate", function (event) {
  event.waitUntil(
    caches.keys().then(function (names) {
      return Promise.all(names.filter(function (name) {
        return name.indexOf("checkin-page-") === 0 && name !== CACHE;
      }).map(function (name) { return caches.delete(name); }));
    }).then(function () { return self.clients.claim(); })
  );
});

function withTimeout(promise, ms) {
  return new Promise(function (resolve, reject) {
    var timer = setTimeout(function () { reject(new Error("timeout")); }, ms);
    promise.then(function (value) { clearTimeout(timer); resolve(value); },
                 function (error) { clearTimeout(timer); reject(error); });
  });
}

function dropPage() {
  return caches.keys().then(function (names) {
    return Promise.all(names.filter(function (name) { return name.indexOf("checkin-page-") === 0; })
      .map(function (name) {
        return caches.open(name).then(function (cache) { return cache.delete(PAGE, { ignoreSearch: true }); });
      }));
  });
}

function nobodySignedIn() {
  var text = SIGNED_OUT.replace(/&/g, "&amp;").replace(/</g, "&lt;");
  var body = "<!DOCTYPE html><meta charset=\"utf-8\"><meta name=\"viewport\" " +
    "content=\"width=device-width, initial-scale=1\"><title>" + text + "</title>" +
    "<p id=\"signed-out\">" + text + "</p>";
  return new Response(body, { status: 503, headers: { "Content-Type": "text/html; charset=utf-8" } });
}

function pageFromNetwork(request) {
  return caches.open(CACHE).then(function (cache) {
    return withTimeout(fetch(request), PAGE_TIMEOUT_MS).then(function (response) {
      // A redirect (signed out) or an error page is shown, never cached over the page; a sign-in
      // redirect or a refusal means the cached page is no one's any more.
      if (response.ok && response.type === "basic") cache.put(PAGE, response.clone());
      else if (response.type === "opaqueredirect" || response.redirected ||
               response.status === 302 || response.status === 403) return dropPage().then(function () { return response; });
      return response;
    }).catch(function () {
      return cache.match(PAGE).then(function (cached) {
        return cached || nobodySignedIn();
      });
    });
  });
}

self.addEventListener("message", function (event) {
  if (event.data && event.data.type === "signed-out") event.waitUntil(dropPage());
});

self.addEventListener("fetch", function (event) {
  var request = event.request;
  if (request.method !== "GET") return;
  var url = new URL(request.url);
  if (url.origin !== self.location.origin) return;
  if (url.pathname === PAGE && request.mode === "navigate") {
    event.respondWith(pageFromNetwork(request));
    return;
  }
  if (ASSETS.indexOf(url.pathname) >= 0) {
    event.respondWith(caches.open(CACHE).then(function (cache) {
      return cache.match(url.pathname).then(function (cached) {
        return cached || fetch(request).then(function (response) {
          if (response.ok) cache.put(url.pathname, response.clone());
          return response;
        });
      });
    }));
  }
});
