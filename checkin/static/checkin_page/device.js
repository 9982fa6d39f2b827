// The page as a gate's installed app (CONTRACT §15): the browser is asked to keep this device's
// copy of the event and its queued scans (persistent storage: not evicted under storage
// pressure), and the screen stays on while the page is shown (Screen Wake Lock, taken again
// whenever the page comes back into view: the browser releases it when the page is hidden).
// What each request got is on <html> (data-storage, data-wake-lock).
(function () {
  "use strict";
  var root = document.documentElement;

  if (navigator.storage && navigator.storage.persist) {
    navigator.storage.persist().then(
      function (kept) { root.dataset.storage = kept ? "persisted" : "best-effort"; },
      function () { root.dataset.storage = "best-effort"; }
    );
  } else {
    root.dataset.storage = "unsupported";
  }

  var lock = null;
  function keepScreenOn() {
    if (!("wakeLock" in navigator)) { root.dataset.wakeLock = "unsupported"; return; }
    if (lock || document.visibilityState !== "visible") return;
    navigator.wakeLock.request("screen").then(function (taken) {
      lock = taken;
      root.dataset.wakeLock = "held";
      taken.addEventListener("release", function () { lock = null; root.dataset.wakeLock = "released"; });
    }, function () { root.dataset.wakeLock = "refused"; });
  }
  document.addEventListener("visibilitychange", keepScreenOn);
  keepScreenOn();
})();
