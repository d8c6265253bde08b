// Staff inbox: the list refreshes its rows; the conversation page polls its events endpoint and
// acts through the REST API (session + CSRF + X-Tenant). No external code, no storage.
(function () {
  "use strict";

  function refreshList(table) {
    var url = table.dataset.refreshUrl;
    var every = (parseInt(table.dataset.pollSeconds, 10) || 10) * 1000;
    var body = document.getElementById("inbox-rows");
    setInterval(function () {
      fetch(url, { credentials: "same-origin", headers: { "X-Requested-With": "fetch" } })
        .then(function (r) { return r.ok ? r.text() : null; })
        .then(function (html) { if (html !== null) body.innerHTML = html; })
        .catch(function () {});
    }, every);
  }

  function conversationPage(root) {
    var t = JSON.parse(document.getElementById("inbox-i18n").textContent);
    var list = document.getElementById("inbox-messages");
    var form = document.getElementById("inbox-reply-form");
    var text = document.getElementById("inbox-reply-text");
    var send = document.getElementById("inbox-send");
    var errorBox = document.getElementById("inbox-error");
    var notice = document.getElementById("inbox-notice");
    var buttons = {
      claim: document.getElementById("inbox-claim"),
      release: document.getElementById("inbox-release"),
      close: document.getElementById("inbox-close")
    };
    var cursor = root.dataset.cursor || "";
    var every = (parseInt(root.dataset.pollSeconds, 10) || 3) * 1000;
    var lang = document.documentElement.lang || undefined;
    var busy = false;

    function fmt(s, values) {
      return s.replace(/%\((\w+)\)s/g, function (_m, k) { return String(values[k]); });
    }
    function csrf() {
      var f = form.querySelector("input[name=csrfmiddlewaretoken]");
      return f ? f.value : "";
    }
    function showError(message) {
      errorBox.textContent = message;
      errorBox.hidden = false;
    }
    function clearError() { errorBox.hidden = true; errorBox.textContent = ""; }
    function timeLabel(iso) {
      try { return new Date(iso).toLocaleTimeString(lang, { hour: "2-digit", minute: "2-digit" }); }
      catch (e) { return iso; }
    }

    function showDelivery(li, m) {
      var span = li.querySelector(".delivery");
      if (!span) {
        span = document.createElement("span");
        span.className = "delivery";
        li.appendChild(span);
      }
      span.dataset.delivery = m.delivery_status || "";
      span.textContent = m.delivery || "";
      span.hidden = !m.delivery;
    }

    function addMessage(m) {
      var known = list.querySelector('[data-message-id="' + m.id + '"]');
      if (known) { showDelivery(known, m); return; }
      var li = document.createElement("li");
      li.className = "message " + m.kind;
      li.dataset.messageId = m.id;
      li.dataset.kind = m.kind;
      var who = document.createElement("span");
      who.className = "who";
      who.textContent = t[m.kind] + (m.author ? " · " + m.author : "");
      var when = document.createElement("time");
      when.setAttribute("datetime", m.created_at);
      when.textContent = new Date(m.created_at).toLocaleString(lang);
      var body = document.createElement("span");
      body.className = "text";
      body.textContent = m.content;
      li.appendChild(who);
      li.appendChild(when);
      li.appendChild(body);
      showDelivery(li, m);
      list.appendChild(li);
    }

    function applyState(s) {
      root.dataset.status = s.status;
      root.dataset.holderIsMe = s.holder_is_me ? "true" : "false";
      document.getElementById("inbox-status").textContent = s.status_label;
      var e = s.escalation || {};
      document.getElementById("inbox-reason").textContent = s.reason_label || "—";
      document.getElementById("inbox-priority").textContent = s.priority_label || "—";
      document.getElementById("inbox-detail").textContent = e.detail || "—";
      var by = e.trigger_label || "";
      if (e.layer_label && e.layer_label !== by) by = by ? by + " · " + e.layer_label : e.layer_label;
      document.getElementById("inbox-trigger").textContent = by || "—";
      var summary = document.getElementById("inbox-summary");
      summary.textContent = e.summary || "—";
      var holder = document.getElementById("inbox-holder");
      holder.dataset.claimed = s.claimed ? "true" : "false";
      if (!s.claimed) holder.textContent = t.unclaimed;
      else if (s.holder_is_me) holder.textContent = fmt(t.claimed_by_me, { time: timeLabel(s.claim_expires_at) });
      else holder.textContent = fmt(t.claimed_by, { name: s.holder, time: timeLabel(s.claim_expires_at) });
      buttons.claim.disabled = !s.can_claim;
      buttons.release.disabled = !s.can_release;
      buttons.close.disabled = !s.can_close;
      text.disabled = !s.can_reply;
      send.disabled = !s.can_reply;
    }

    function poll() {
      var url = root.dataset.eventsUrl + (cursor ? "?after=" + encodeURIComponent(cursor) : "");
      return fetch(url, { credentials: "same-origin" })
        .then(function (r) { if (!r.ok) throw new Error(String(r.status)); return r.json(); })
        .then(function (data) {
          data.messages.forEach(addMessage);
          if (data.cursor) cursor = data.cursor;
          applyState(data.state);
        });
    }

    function act(action, payload) {
      if (busy) return Promise.resolve(false);
      busy = true;
      clearError();
      return fetch(root.dataset.apiUrl + action, {
        method: "POST",
        credentials: "same-origin",
        headers: {
          "Content-Type": "application/json",
          "Accept": "application/json",
          "X-CSRFToken": csrf(),
          "X-Tenant": root.dataset.tenant
        },
        body: JSON.stringify(payload || {})
      })
        .then(function (r) {
          return r.json().catch(function () { return {}; }).then(function (data) {
            if (!r.ok) {
              showError((data.error && data.error.message) || t.generic);
              return false;
            }
            return true;
          });
        })
        .catch(function () { showError(t.network); return false; })
        .then(function (ok) {
          busy = false;
          return poll().catch(function () {}).then(function () { return ok; });
        });
    }

    Object.keys(buttons).forEach(function (name) {
      buttons[name].addEventListener("click", function () {
        act(name).then(function (ok) {
          if (ok) notice.textContent = t[name === "claim" ? "claimed" : name === "release" ? "released" : "closed"];
          if (ok && name === "claim") text.focus();
        });
      });
    });

    form.addEventListener("submit", function (event) {
      event.preventDefault();
      var value = text.value.trim();
      if (!value) { showError(t.empty); text.focus(); return; }
      send.disabled = true;
      act("reply", { text: value }).then(function (ok) {
        if (ok) { text.value = ""; notice.textContent = t.sent; }
        text.focus();
      });
    });
    text.addEventListener("keydown", function (event) {
      if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) form.requestSubmit();
    });

    setInterval(function () { if (!busy) poll().catch(function () {}); }, every);
  }

  var table = document.getElementById("inbox-list");
  if (table) refreshList(table);
  var root = document.getElementById("inbox-conversation");
  if (root) conversationPage(root);
})();
