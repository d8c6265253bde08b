// Staff inbox, one conversation: re-reads its events endpoint when InboxLive reports a change of
// this conversation (or asks for a resync), when a colleague's lease ends, and on a slow timer;
// acts through the REST API (session + CSRF + X-Tenant): claim, take over (owner/admin, after a
// confirmation), assign to a teammate, release, close, reply, internal note (the composer's
// "Nota interna" mode). Keys: Ctrl+Enter sends, Esc closes the open panel or dialog, "u"
// (outside text boxes) goes back to the list. Times are written in the tenant's zone
// (data-time-zone) in the inbox's one format: dd/mm/yyyy hh:mm; their zone's words (titles,
// the lease's "UTC+1") come from the server's state. A member whose conversation an owner
// took over sees who took it and why the reply box closed, on the next update.
(function () {
  "use strict";
  var root = document.getElementById("inbox-conversation");
  if (!root) return;
  var t = JSON.parse(document.getElementById("inbox-i18n").textContent);
  var list = document.getElementById("inbox-messages");
  var form = document.getElementById("inbox-reply-form");
  var text = document.getElementById("inbox-reply-text");
  var send = document.getElementById("inbox-send");
  var errorBox = document.getElementById("inbox-error");
  var notice = document.getElementById("inbox-notice");
  var more = document.getElementById("inbox-more");
  var moreToggle = document.getElementById("inbox-more-toggle");
  var closeDialog = document.getElementById("inbox-close-dialog");
  var takeoverDialog = document.getElementById("inbox-takeover-dialog");
  var assignPanel = document.getElementById("inbox-assign");
  var assignee = document.getElementById("inbox-assignee");
  var buttons = {
    claim: document.getElementById("inbox-claim"),
    takeover: document.getElementById("inbox-takeover"),
    assign: document.getElementById("inbox-assign-toggle"),
    release: document.getElementById("inbox-release"),
    close: document.getElementById("inbox-close")
  };
  var cursor = root.dataset.cursor || "";
  var zone = root.dataset.timeZone || "UTC";
  var busy = false;
  var leaseTimer = null;
  var mode = "reply";
  var canReply = root.dataset.canReply === "true";
  // Why this viewer may not reply, in the server's words (who holds it, what to do instead).
  var replyWhy = root.dataset.replyWhy || "";
  var why = document.getElementById("inbox-reply-why");
  var keys = document.getElementById("inbox-reply-keys");
  // Set while this page's own claim or assignment is on its way: only a colleague's assignment
  // announces "Asignada a usted".
  var taking = false;
  // Set while this page's own action and its re-read run: a change it made is not "lost".
  var acting = false;
  // Who took the conversation from this page's member (the reply box says so); "" else.
  var lostTo = "";

  function fmt(s, values) {
    return s.replace(/%\((\w+)\)s/g, function (_m, k) { return String(values[k]); });
  }
  function timeText(iso) {
    if (!iso) return "";
    try {
      var parts = {};
      new Intl.DateTimeFormat("en-GB", {
        timeZone: zone, year: "numeric", month: "2-digit", day: "2-digit",
        hour: "2-digit", minute: "2-digit", hourCycle: "h23"
      }).formatToParts(new Date(iso)).forEach(function (p) { parts[p.type] = p.value; });
      return parts.day + "/" + parts.month + "/" + parts.year + " " + parts.hour + ":" + parts.minute;
    } catch (e) { return iso; }
  }
  function csrf() {
    var f = form.querySelector("input[name=csrfmiddlewaretoken]");
    return f ? f.value : "";
  }
  function showError(message) { errorBox.textContent = message; errorBox.hidden = false; }
  function clearError() { errorBox.hidden = true; errorBox.textContent = ""; }
  function el(tag, cls, content) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (content !== undefined) node.textContent = content;
    return node;
  }

  function showDelivery(li, m) {
    var span = li.querySelector(".delivery");
    if (!span) { span = el("span", "delivery"); li.appendChild(span); }
    span.dataset.delivery = m.delivery_status || "";
    span.textContent = m.delivery || "";
    span.hidden = !m.delivery;
  }

  function place(li, createdAt) {
    // Keep time order (a note or a late message may belong before the last row).
    var rows = list.children;
    for (var i = rows.length - 1; i >= 0; i--) {
      var at = rows[i].querySelector("time");
      if (!at || at.getAttribute("datetime") <= createdAt) break;
    }
    list.insertBefore(li, rows[i + 1] || null);
    if (stick) list.scrollTop = list.scrollHeight;
  }

  function addMessage(m) {
    var known = list.querySelector('[data-message-id="' + m.id + '"]');
    if (known) { showDelivery(known, m); return; }
    var li = el("li", "message " + m.kind);
    li.dataset.messageId = m.id;
    li.dataset.kind = m.kind;
    li.appendChild(el("span", "who", t[m.kind] + (m.author ? " · " + m.author : "")));
    var when = el("time", "", timeText(m.created_at));
    when.setAttribute("datetime", m.created_at);
    when.title = m.time_title || "";
    li.appendChild(when);
    li.appendChild(el("span", "text", m.content));
    if (m.options && m.options.length) { // the choices a bot answer offered, numbered as a
      // customer may type them ("2" is the second)
      var chips = el("ol", "options");
      chips.setAttribute("aria-label", t.options || "");
      m.options.forEach(function (title, i) {
        chips.appendChild(el("li", "", (i + 1) + ". " + title));
      });
      li.appendChild(chips);
    }
    showDelivery(li, m);
    place(li, m.created_at);
  }

  function addNote(n) {
    if (list.querySelector('[data-note-id="' + n.id + '"]')) return;
    var li = el("li", "note");
    li.dataset.noteId = n.id;
    li.dataset.kind = "note";
    li.appendChild(el("span", "who", t.note + (n.author && n.author.name ? " · " + n.author.name : "")));
    var when = el("time", "", timeText(n.created_at));
    when.setAttribute("datetime", n.created_at);
    when.title = n.time_title || "";
    li.appendChild(when);
    li.appendChild(el("span", "text", n.text));
    place(li, n.created_at);
  }

  function holderText(s) {
    if (!s.claimed) return t.unclaimed;
    var values = {
      // the server's words: the lease's end with its zone ("10:20 UTC+1")
      name: s.holder, since: s.holder_since_text || timeText(s.holder_since),
      until: s.claim_expires_text || timeText(s.claim_expires_at)
    };
    return fmt(s.holder_is_me ? t.holder_me : t.holder_other, values);
  }

  function watchLease(s) {
    // A colleague's lease ends by itself: re-read then (the controls open up).
    clearTimeout(leaseTimer);
    if (!s.claimed || s.holder_is_me || !s.claim_expires_at) return;
    var wait = new Date(s.claim_expires_at).getTime() - Date.now() + 1000;
    leaseTimer = setTimeout(poll, Math.max(1000, Math.min(wait, 2147483000)));
  }

  function applyState(s) {
    root.dataset.status = s.status;
    root.dataset.claimExpiresAt = s.claim_expires_at || "";
    var status = document.getElementById("inbox-status");
    // Capitalised as the page first showed it (the template's capfirst), as the cards do.
    status.textContent = s.status_label.charAt(0).toUpperCase() + s.status_label.slice(1);
    status.className = "status status-" + s.status;
    var e = s.escalation || {};
    document.getElementById("inbox-reason").textContent = s.reason_label || "—";
    var detail = document.getElementById("inbox-detail");
    detail.textContent = e.detail || "";
    detail.hidden = !e.detail;
    var priority = document.getElementById("inbox-priority");
    priority.textContent = s.priority_label || "—";
    priority.className = "priority priority-" + (s.escalation_priority || "none");
    var by = e.trigger_label || "";
    if (e.layer_label && e.layer_label !== by) by = by ? by + " · " + e.layer_label : e.layer_label;
    document.getElementById("inbox-trigger").textContent = by || "—";
    document.getElementById("inbox-summary").textContent = e.summary || "—";
    var waiting = document.getElementById("inbox-waiting");
    waiting.setAttribute("datetime", s.waiting_since || "");
    waiting.textContent = timeText(s.waiting_since);
    waiting.title = s.waiting_since_title || "";
    document.getElementById("inbox-waiting-line").hidden = !s.waiting_since;
    var holder = document.getElementById("inbox-holder");
    holder.dataset.claimed = s.claimed ? "true" : "false";
    holder.dataset.mine = s.holder_is_me ? "true" : "false";
    holder.textContent = holderText(s);
    root.dataset.holder = s.holder || "";
    holder.title = s.holder_title || "";
    if (s.holder_is_me && root.dataset.holderIsMe !== "true" && !taking) {
      notice.textContent = t.assigned_to_me;
    }
    if (s.holder_is_me || !s.claimed) {
      lostTo = "";
    } else if (root.dataset.holderIsMe === "true" && !acting) {
      // A colleague (an owner taking over) holds what this member held: say who, and why
      // the reply box closed.
      lostTo = s.holder;
      notice.textContent = fmt(t.lost, { name: lostTo });
    }
    root.dataset.holderIsMe = s.holder_is_me ? "true" : "false";
    // Claim only shows while it can be done: a greyed "Reclamar" beside "Tomar el control" (or
    // on one's own conversation) reads as a second, broken way in, and on a phone it pushes
    // "Devolver al bot" and "Cerrar" off the row.
    buttons.claim.disabled = !s.can_claim;
    buttons.claim.hidden = !s.can_claim;
    buttons.takeover.hidden = !s.can_take_over;
    buttons.assign.disabled = !s.can_assign;
    if (!s.can_assign) setAssign(false);
    buttons.release.disabled = !s.can_release;
    buttons.close.disabled = !s.can_close;
    canReply = s.can_reply;
    replyWhy = s.reply_why || "";
    root.dataset.canReply = canReply ? "true" : "false";
    applyMode();
    watchLease(s);
    // inbox_window.js follows the WhatsApp window and the reply rights from here.
    document.dispatchEvent(new CustomEvent("inbox:state", { detail: s }));
  }

  function poll() {
    var url = root.dataset.eventsUrl + (cursor ? "?after=" + encodeURIComponent(cursor) : "");
    return fetch(url, { credentials: "same-origin" })
      .then(function (r) { if (!r.ok) throw new Error(String(r.status)); return r.json(); })
      .then(function (data) {
        data.messages.forEach(addMessage);
        (data.notes || []).forEach(addNote);
        if (data.cursor) cursor = data.cursor;
        applyState(data.state);
      });
  }

  function act(action, payload) {
    if (busy) return Promise.resolve(false);
    busy = true;
    acting = true;
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
          if (!r.ok) { showError((data.error && data.error.message) || t.generic); return false; }
          return true;
        });
      })
      .catch(function () { showError(t.network); return false; })
      .then(function (ok) {
        busy = false;
        return poll().catch(function () {}).then(function () { acting = false; return ok; });
      });
  }

  var done = { claim: "claimed", takeover: "taken_over", release: "released", close: "closed" };
  function run(name) {
    taking = name === "claim" || name === "takeover";
    act(name).then(function (ok) {
      taking = false;
      if (ok) notice.textContent = t[done[name]];
      if (ok && (name === "claim" || name === "takeover")) text.focus();
    });
  }

  // Notes may be written in any state (closed too); replies only by the holder.
  function applyMode() {
    var note = mode === "note";
    form.dataset.mode = mode;
    document.getElementById("inbox-reply-label").textContent = note ? t.note_label : t.reply_label;
    // why the reply box is locked, in the box too: a phone shows no hint line
    var locked = !note && !canReply;
    var reason = lostTo ? fmt(t.lost, { name: lostTo }) : replyWhy;
    why.textContent = note ? t.note_hint : reason;
    why.hidden = !note && !locked;
    keys.hidden = note || locked;  // "Ctrl+Intro envía" is no help when nothing can be sent
    text.placeholder = locked ? reason : "";
    send.textContent = note ? t.send_note : t.send_reply;
    text.disabled = !note && !canReply;
    send.disabled = !note && !canReply;
  }
  form.querySelectorAll("input[name=mode]").forEach(function (radio) {
    radio.addEventListener("change", function () {
      if (!radio.checked) return;
      mode = radio.value;
      clearError();
      applyMode();
      if (!text.disabled) text.focus();
    });
  });

  function setAssign(open) {
    assignPanel.hidden = !open;
    buttons.assign.setAttribute("aria-expanded", open ? "true" : "false");
  }
  buttons.assign.addEventListener("click", function () {
    setAssign(assignPanel.hidden);
    if (!assignPanel.hidden) assignee.focus();
  });
  assignPanel.addEventListener("submit", function (event) {
    event.preventDefault();
    var option = assignee.options[assignee.selectedIndex];
    if (!option) return;
    taking = option.dataset.me === "true";
    act("assign", { staff_email: option.value }).then(function (ok) {
      taking = false;
      if (!ok) return;
      notice.textContent = fmt(t.assigned, { name: option.textContent });
      setAssign(false);
      buttons.assign.focus();
    });
  });
  buttons.claim.addEventListener("click", function () { run("claim"); });
  buttons.release.addEventListener("click", function () { run("release"); });
  buttons.close.addEventListener("click", function () { closeDialog.showModal(); });
  buttons.takeover.addEventListener("click", function () {
    // the dialog names whom the conversation is taken from (the holder as of the last update)
    var who = root.dataset.holder;
    if (who) document.getElementById("inbox-takeover-text").textContent = fmt(t.takeover_text, { name: who });
    takeoverDialog.showModal();
  });
  takeoverDialog.addEventListener("close", function () {
    var confirmed = takeoverDialog.returnValue === "takeover";
    takeoverDialog.returnValue = "";
    if (confirmed) { run("takeover"); return; }
    buttons.takeover.focus();
  });
  closeDialog.addEventListener("close", function () {
    if (closeDialog.returnValue === "close") run("close");
    closeDialog.returnValue = "";
    buttons.close.focus();
  });

  function setMore(open) {
    more.hidden = !open;
    root.dataset.details = open ? "open" : "closed";
    moreToggle.setAttribute("aria-expanded", open ? "true" : "false");
  }
  moreToggle.addEventListener("click", function () { setMore(more.hidden); });

  form.addEventListener("submit", function (event) {
    event.preventDefault();
    var value = text.value.trim();
    var note = mode === "note";
    if (!value) { showError(note ? t.note_empty : t.empty); text.focus(); return; }
    send.disabled = true;
    act(note ? "notes" : "reply", { text: value }).then(function (ok) {
      if (ok) { text.value = ""; notice.textContent = note ? t.note_saved : t.sent; }
      applyMode();
      text.focus();
    });
  });

  // Focus back on the button that opened a panel; on a phone it sits in the closed "Más"
  // panel (inbox_actions_menu.js): then on "Más" itself.
  function focusBack(button) {
    var menuToggle = document.getElementById("inbox-actions-toggle");
    var shown = button.getClientRects().length > 0;
    if (!shown && menuToggle && menuToggle.getClientRects().length > 0) menuToggle.focus();
    else button.focus();
  }

  document.addEventListener("keydown", function (event) {
    var target = event.target;
    var typing = target && /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName);
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey) && target === text) {
      event.preventDefault();
      if (!send.disabled) form.requestSubmit();
    } else if (event.key === "Escape"
               && (event.defaultPrevented || document.querySelector("dialog[open]"))) {
      return;  // the "Más" menu (inbox_actions_menu.js) or a dialog closes; the panel stays
    } else if (event.key === "Escape" && !assignPanel.hidden) {
      setAssign(false);
      focusBack(buttons.assign);
    } else if (event.key === "Escape" && !more.hidden) {
      setMore(false);
      focusBack(moreToggle);
    } else if (event.key === "u" && !typing && !event.ctrlKey && !event.metaKey && !event.altKey
               && !document.querySelector("dialog[open]")) {
      window.location.href = root.dataset.listUrl;
    }
  });

  document.querySelectorAll("#inbox-messages time, #inbox-holder time").forEach(function (node) {
    var iso = node.getAttribute("datetime");
    if (iso) node.textContent = timeText(iso);
  });
  // The timeline scrolls by itself; it opens at the newest message and stays there while the
  // reader is at the end (new messages, panels that open and shrink it), not while they read
  // older ones.
  var stick = true;
  list.scrollTop = list.scrollHeight;
  list.addEventListener("scroll", function () {
    stick = list.scrollHeight - list.scrollTop - list.clientHeight < 80;
  });
  if (window.ResizeObserver) {
    new ResizeObserver(function () { if (stick) list.scrollTop = list.scrollHeight; }).observe(list);
  }
  if (root.dataset.claimExpiresAt && root.dataset.holderIsMe !== "true") {
    watchLease({ claimed: true, holder_is_me: false, claim_expires_at: root.dataset.claimExpiresAt });
  }

  // Another script of the page acted (a template sent): re-read now.
  document.addEventListener("inbox:refresh", function () { if (!busy) poll().catch(function () {}); });

  var id = root.dataset.conversationId;
  if (window.InboxLive) {
    window.InboxLive.subscribe(function (event) {
      if (event.kind === "resync" || event.conversation_id === id) {
        if (!busy) poll().catch(function () {});
      }
    });
  }
  // Without live events (no stream yet, or polling) the page re-reads itself every few seconds;
  // with them, every ten times that, as a safety net.
  var every = (parseInt(root.dataset.pollSeconds, 10) || 3) * 1000;
  var lastPoll = Date.now();
  setInterval(function () {
    var live = window.InboxLive && window.InboxLive.mode() === "live";
    if (busy || (live && Date.now() - lastPoll < every * 10)) return;
    lastPoll = Date.now();
    poll().catch(function () {});
  }, every);
})();
