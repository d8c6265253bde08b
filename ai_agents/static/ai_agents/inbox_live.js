// Inbox live updates: one connection per page to the server-sent events of /inbox/live.
//
//   var unsubscribe = window.InboxLive.subscribe(function (event) { ... });
//
// `event` is {kind, conversation_id, tenant_id} when a conversation of one of the member's
// tenants changed (kind: "message", "status", "assignment", "note", "typing", "delivery",
// "rating"), or {kind: "resync"} when the page should re-read what it shows: after each
// (re)connection, and at every tick of the polling fallback. Events carry ids only; pages read
// the data through their own endpoints.
//
// Transport: EventSource (the browser reconnects by itself and sends Last-Event-ID, so nothing
// is missed); when it cannot connect (no EventSource, a proxy that buffers, a login redirect)
// three times in a row, or says nothing for 10 s, the module falls back to a "resync" every `data-poll-seconds` (10)
// and tries the stream again a minute later. `InboxLive.mode()` says "connecting", "live" or
// "polling" (also in `document.documentElement.dataset.inboxLive`).
// Load with <script src="inbox_live.js" data-url="/inbox/live" data-poll-seconds="10">.
(function () {
  "use strict";
  if (window.InboxLive) return;
  var script = document.currentScript;
  var url = (script && script.dataset.url) || "/inbox/live";
  var pollMs = ((script && parseInt(script.dataset.pollSeconds, 10)) || 10) * 1000;
  var RETRY_STREAM_MS = 60000;
  var READY_WITHIN_MS = 10000;
  var listeners = [];
  var source = null;
  var failures = 0;
  var pollTimer = null;
  var state = "connecting";

  function setMode(mode) {
    state = mode;
    document.documentElement.dataset.inboxLive = mode;
  }

  function emit(event) {
    listeners.slice().forEach(function (callback) {
      try { callback(event); } catch (e) { if (window.console) console.error(e); }
    });
  }

  function startPolling() {
    if (pollTimer) return;
    setMode("polling");
    pollTimer = setInterval(function () { emit({ kind: "resync" }); }, pollMs);
    setTimeout(function () {
      clearInterval(pollTimer);
      pollTimer = null;
      connect();
    }, RETRY_STREAM_MS);
  }

  function connect() {
    if (!window.EventSource) { startPolling(); return; }
    setMode("connecting");
    failures = 0;
    source = new EventSource(url, { withCredentials: true });
    // A stream that says nothing (a buffering proxy) is no stream.
    var mine = source;
    var silent = setTimeout(function () {
      if (source === mine && state !== "live") fail(true);
    }, READY_WITHIN_MS);
    source.addEventListener("ready", function () {
      clearTimeout(silent);
      failures = 0;
      setMode("live");
      emit({ kind: "resync" });
    });
    source.addEventListener("inbox", function (message) {
      var data;
      try { data = JSON.parse(message.data); } catch (e) { return; }
      emit({ kind: data.kind, conversation_id: data.conversation_id, tenant_id: data.tenant_id });
    });
    source.onerror = function () { fail(false); };
  }

  function fail(now) {
    // A stream that ended (bounded lifetime) reconnects by itself: CONNECTING. Repeated
    // errors without a "ready" between them, a refused stream (CLOSED: 204, a login page)
    // or a silent one mean no live updates: poll.
    failures += 1;
    if (now || source.readyState === EventSource.CLOSED || failures >= 3) {
      source.close();
      source = null;
      startPolling();
    } else {
      setMode("connecting");
    }
  }

  window.InboxLive = {
    subscribe: function (callback) {
      listeners.push(callback);
      return function () {
        listeners = listeners.filter(function (c) { return c !== callback; });
      };
    },
    mode: function () { return state; }
  };
  connect();
})();
