"""Driving the check-in page in headless Chromium with its clock paused (Playwright's fake
timers): once its copy of the event is complete no timer of the page fires, so a sync of the feed
or a refresh of the counts happens only when a test lets time run; answers, and the browser's
online and offline events, are handled without a timer."""

import re
import time
from concurrent.futures import ThreadPoolExecutor

WAIT_MS = 20_000

# The feed's cursor the copy holds: it moves when a page of the feed is stored.
CURSOR = """(eventId) => new Promise((resolve, reject) => {
    const open = indexedDB.open('checkin-page-'
        + JSON.parse(document.getElementById('checkin-config').textContent).user_id);
    open.onsuccess = () => {
        const got = open.result.transaction('feeds').objectStore('feeds').get(eventId);
        got.onsuccess = () => resolve(got.result ? got.result.cursor : null);
        got.onerror = () => reject(got.error);
    };
    open.onerror = () => reject(open.error);
})"""

# The ticket as the page's copy holds it, read straight from IndexedDB.
COPIED = """([eventId, ticketId]) => new Promise((resolve, reject) => {
    const open = indexedDB.open('checkin-page-'
        + JSON.parse(document.getElementById('checkin-config').textContent).user_id);
    open.onsuccess = () => {
        const got = open.result.transaction('tickets').objectStore('tickets')
            .get([eventId, ticketId]);
        got.onsuccess = () => resolve(got.result ? {
            status: got.result.status, types: got.result.checked_in_type_ids} : null);
        got.onerror = () => reject(got.error);
    };
    open.onerror = () => reject(open.error);
})"""


def open_paused(browser, site, event, check_in_type=None, gate="North door", **options):
    """Signed in, the gate named, the event (and type) picked, its copy complete; then the clock
    is paused. `options` are the browser context's (its locale: the page's language)."""
    context = browser.new_context(viewport={"width": 390, "height": 844}, **options)
    context.clock.install()
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    sign_in(page, site)
    if gate is not None:
        page.fill("#gate", gate)  # asked once on a device; None leaves it unnamed
    page.select_option("#event", str(event.pk))
    if check_in_type is not None:
        page.select_option("#check-in-type", str(check_in_type.pk))
    fresh(page)
    page.clock.pause_at(page.evaluate("Date.now()") / 1000 + 1)
    return context, page, errors


def sign_in(page, site, username="gate"):
    """Opens the check-in page, which sends a browser nobody signed in on to the sign-in page,
    and signs `username` in there (each test member's password is `<username>-pass-123`)."""
    page.goto(f"{site}/checkin/")
    page.wait_for_url(re.compile(r"/oauth/login/?\?next=/checkin/"))
    page.fill("#id_username", username)
    page.fill("#id_password", f"{username}-pass-123")
    page.click("button[type=submit]")
    page.wait_for_url(f"{site}/checkin/")


def fresh(page):
    page.wait_for_function(
        """() => { const f = document.getElementById('freshness');
                   return f.dataset.state === 'fresh' && f.dataset.waiting === '0'; }""",
        timeout=WAIT_MS,
    )


def answer(page):
    return page.evaluate(
        """() => { const r = document.getElementById('result');
                   return {kind: r.className, title: r.querySelector('.result-title').textContent,
                           name: r.querySelector('.result-name').textContent}; }"""
    )


def scan_online(page, code):
    """Types a code; returns the answer once the page takes the next scan."""
    page.evaluate("document.getElementById('result').className = 'result result-idle'")
    page.fill("#code", code)
    page.press("#code", "Enter")
    page.wait_for_function(
        """() => { const r = document.getElementById('result');
                   return !/result-idle/.test(r.className) && !r.hasAttribute('aria-busy'); }""",
        timeout=WAIT_MS,
    )
    return answer(page)


def undo_online(page):
    page.evaluate("document.getElementById('result').className = 'result result-idle'")
    page.click("#undo")
    page.wait_for_function(
        """() => { const r = document.getElementById('result');
                   return !/result-idle/.test(r.className) && !r.hasAttribute('aria-busy'); }""",
        timeout=WAIT_MS,
    )
    return answer(page)


def scan_offline(page, code):
    page.evaluate("delete document.getElementById('result').dataset.decidedMs")
    page.fill("#code", code)
    page.press("#code", "Enter")
    page.wait_for_function(
        "() => document.getElementById('result').dataset.decidedMs !== undefined",
        timeout=WAIT_MS,
    )
    return answer(page)


def reload_offline(page):
    """Opens the page again with no network: the service worker answers it."""
    _load_offline(page, page.reload)
    return page


def open_offline(context, url):
    """Opens `url` with no network in a new tab of `context`: the service worker answers it."""
    page = context.new_page()
    _load_offline(page, lambda: page.goto(url))
    return page


def _load_offline(page, load, attempts=3):
    """Chromium hands a navigation to the network itself, as if there were no worker, when it
    cannot dispatch it to the worker (its last resort, as for a worker that does not start in
    time on a loaded machine); offline, that shows the browser's own error page. A new load meets
    the worker again, so a worker that never answers fails every attempt."""
    from playwright.sync_api import Error

    for _ in range(attempts):
        try:
            load()
        except Error as error:
            if "ERR_INTERNET_DISCONNECTED" not in error.message:
                raise
        if page.evaluate("location.protocol") != "chrome-error:":
            return
    raise AssertionError(f"the service worker did not answer {attempts} offline loads")


def go_offline(context, page):
    context.set_offline(True)
    page.wait_for_function(
        "() => document.getElementById('freshness').dataset.state === 'offline'",
        timeout=WAIT_MS,
    )


def outside(work):
    """Runs database work from a plain thread: Playwright's sync API runs an event loop here."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(work).result()


def until(condition, what, seconds=WAIT_MS / 1000):
    """Until `condition`, database work run by `outside`, is true; fails naming `what`."""
    deadline = time.monotonic() + seconds
    while not outside(condition):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {seconds:.0f} s waiting for {what}")
        time.sleep(0.05)


def kind(shown):
    """admitted, used, refused or undone: what an answer's colour says."""
    return re.search(r"result-(admitted|used|refused|undone)", shown["kind"]).group(1)


def forged_code(code):
    """The code with one character of its signature changed (not the last: its low bits are
    padding, and changing them may leave the signature's bytes as they were)."""
    head, signature = code.rsplit(".", 1)
    changed = "A" if signature[10] != "A" else "B"
    return f"{head}.{signature[:10]}{changed}{signature[11:]}"


def swapped_code(code, other):
    """`code`'s payload with `other`'s signature."""
    return code.rsplit(".", 1)[0] + "." + other.rsplit(".", 1)[1]
