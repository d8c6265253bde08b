// Inbox alerts: "(N) " before the tab title while N conversations wait for a person, and, when
// the member asked for them (Avisos), a browser notification and a short sound for each
// conversation that starts waiting while the page is open. Re-reads /inbox/waiting on live
// events (InboxLive) and on each polling tick. Esc or Cancelar closes the preferences dialog.
(function () {
  "use strict";
  var root = document.getElementById("inbox-alerts");
  if (!root || !window.InboxLive) return;
  var t = JSON.parse(document.getElementById("inbox-alerts-i18n").textContent);
  var dialog = document.getElementById("inbox-prefs");
  var desktop = document.getElementById("inbox-pref-desktop");
  var sound = document.getElementById("inbox-pref-sound");
  var live = document.getElementById("inbox-alert-live");
  var prefsError = document.getElementById("inbox-prefs-error");
  var baseTitle = document.title;
  var prefs = { notify_desktop: false, notify_sound: false };
  var known = null; // ids already waiting (null until the first read: no alert for those)
  var floor = ""; // the last list's oldest `since` when it was cut and all for this person
  var timer = null;
  var audio = null;

  function fmt(s, values) {
    return s.replace(/%\((\w+)\)s/g, function (_m, k) { return String(values[k]); });
  }
  function csrf() {
    var field = document.querySelector("input[name=csrfmiddlewaretoken]");
    return field ? field.value : "";
  }

  function showCount(count) {
    document.title = count > 0 ? "(" + count + ") " + baseTitle : baseTitle;
    root.dataset.waiting = String(count);
  }

  function alertFor(row) {
    var text = fmt(t.new_waiting, { name: row.contact, channel: row.channel_label });
    live.textContent = text;
    if (prefs.notify_desktop && window.Notification && Notification.permission === "granted") {
      try {
        var n = new Notification(t.notification_title, { body: text, tag: row.id });
        n.onclick = function () { window.focus(); window.location.href = row.url; };
        root.dataset.notified = String((parseInt(root.dataset.notified, 10) || 0) + 1);
      } catch (e) { /* some browsers allow notifications from a service worker only */ }
    }
    if (prefs.notify_sound) {
      audio = audio || new Audio(root.dataset.soundUrl);
      audio.currentTime = 0;
      var played = audio.play();
      root.dataset.soundsPlayed = String((parseInt(root.dataset.soundsPlayed, 10) || 0) + 1);
      if (played && played.catch) played.catch(function () {});
    }
  }

  function refresh() {
    return fetch(root.dataset.waitingUrl, { credentials: "same-origin" })
      .then(function (r) { if (!r.ok) throw new Error(String(r.status)); return r.json(); })
      .then(function (data) {
        showCount(data.count);
        // Per id, whether it was for this person: a colleague's conversation let go (or
        // whose lease ran out) becomes theirs to answer and alerts then. An id the last list
        // did not have alerts when it started waiting after that list's oldest row, if that
        // list was cut and all for this person (the ones cut off waited longer: one that
        // comes back into the list, after a newer one was answered, is not new).
        var ids = {};
        data.conversations.forEach(function (row) {
          ids[row.id] = row.alert;
          if (known === null || !row.alert) return;
          if (row.id in known ? !known[row.id] : row.since > floor) alertFor(row);
        });
        known = ids;
        var mine = data.conversations.filter(function (row) { return row.alert; });
        var cut = data.count > data.conversations.length;
        floor = cut && mine.length === data.conversations.length
          ? mine[mine.length - 1].since : "";
      })
      .catch(function () {});
  }

  function soon() {
    clearTimeout(timer);
    timer = setTimeout(refresh, 250);
  }

  window.InboxLive.subscribe(function (event) {
    if (event.kind !== "typing" && event.kind !== "delivery") soon();
  });

  function loadPrefs() {
    return fetch(root.dataset.preferencesUrl, { credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.json() : prefs; })
      .then(function (data) {
        prefs = data;
        desktop.checked = !!data.notify_desktop;
        sound.checked = !!data.notify_sound;
      })
      .catch(function () {});
  }

  function savePrefs() {
    var body = { notify_desktop: desktop.checked, notify_sound: sound.checked };
    prefsError.hidden = true;
    var ask = body.notify_desktop && window.Notification && Notification.permission === "default"
      ? Notification.requestPermission() : Promise.resolve();
    return Promise.resolve(ask).catch(function () {}).then(function () {
      if (body.notify_desktop && window.Notification && Notification.permission === "denied") {
        live.textContent = t.denied;
      }
      return fetch(root.dataset.preferencesUrl, {
        method: "POST",
        credentials: "same-origin",
        headers: { "Content-Type": "application/json", "X-CSRFToken": csrf() },
        body: JSON.stringify(body)
      });
    }).then(function (r) {
      if (!r.ok) throw new Error(String(r.status));
      return r.json();
    }).then(function (data) {
      prefs = data;
      live.textContent = t.saved;
      dialog.close();
    }).catch(function () {
      prefsError.textContent = t.error;
      prefsError.hidden = false;
    });
  }

  document.getElementById("inbox-prefs-open").addEventListener("click", function () {
    loadPrefs().then(function () { dialog.showModal(); desktop.focus(); });
  });
  document.getElementById("inbox-prefs-form").addEventListener("submit", function (event) {
    event.preventDefault();
    savePrefs();
  });
  dialog.querySelector("[data-close-dialog]").addEventListener("click", function () {
    dialog.close();
  });
  // On a phone *Avisos* sits in the closed "Más" panel: the focus goes back to "Más".
  dialog.addEventListener("close", function () {
    var opener = document.getElementById("inbox-prefs-open");
    var menuToggle = document.getElementById("inbox-actions-toggle");
    if (opener.getClientRects().length === 0 && menuToggle && menuToggle.getClientRects().length) {
      menuToggle.focus();
    }
  });

  loadPrefs();
  refresh();
})();
