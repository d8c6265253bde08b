// Staff inbox, WhatsApp's 24-hour window: the header counts down to its end ("Ventana: 3 h
// 12 min", then "Ventana cerrada") every second, with no reload. Once it closed, the reply box
// gives way to a picker of the channel's approved templates (variables filled, preview); the
// internal notes stay. Each time the picker opens (the window closing while the page is open
// included) and on "Actualizar la lista", the templates are read again from
// GET /api/v1/conversations/{id}/templates, so a template synced after the page loaded shows up
// with no reload; the list embedded in the page is only the first one. A template goes through
// POST /api/v1/conversations/{id}/template with a client key kept across retries of the same
// send (the server sends it once). The state comes from inbox_conversation.js ("inbox:state");
// a sent template asks it to re-read ("inbox:refresh").
(function () {
  "use strict";
  var root = document.getElementById("inbox-conversation");
  var badge = document.getElementById("inbox-window");
  var picker = document.getElementById("inbox-template-form");
  if (!root || !badge || !picker) return;
  var t = JSON.parse(document.getElementById("inbox-window-i18n").textContent);
  var templates = JSON.parse(document.getElementById("inbox-templates").textContent);
  var replyForm = document.getElementById("inbox-reply-form");
  var select = document.getElementById("inbox-template");
  var vars = document.getElementById("inbox-template-vars");
  var preview = document.getElementById("inbox-template-preview");
  var send = document.getElementById("inbox-template-send");
  var hint = document.getElementById("inbox-template-hint");
  var reload = document.getElementById("inbox-template-reload");
  var errorBox = document.getElementById("inbox-error");
  var notice = document.getElementById("inbox-notice");
  var closesAt = badge.dataset.closesAt || "";
  var canReply = root.dataset.canReply === "true";
  var busy = false;
  var clientKey = "";
  var shown = false;  // the picker was visible at the last tick
  var loads = 0;  // the latest list request wins

  function fmt(s, values) {
    return s.replace(/%\((\w+)\)s/g, function (_m, k) { return String(values[k]); });
  }
  function chosen() {
    var id = select.value;
    for (var i = 0; i < templates.length; i++) if (String(templates[i].id) === id) return templates[i];
    return null;
  }
  function values() {
    return Array.prototype.map.call(vars.querySelectorAll("input"), function (i) { return i.value.trim(); });
  }

  function tick() {
    var left = closesAt ? new Date(closesAt).getTime() - Date.now() : 0;
    var open = left > 0;
    if (open) {
      var minutes = Math.ceil(left / 60000);
      badge.textContent = fmt(t.left, { h: Math.floor(minutes / 60), m: minutes % 60 });
    } else {
      badge.textContent = t.closed;
    }
    badge.dataset.open = open ? "true" : "false";
    replyForm.dataset.window = open ? "open" : "closed";
    picker.hidden = open || replyForm.dataset.mode === "note";
    send.disabled = busy || !canReply || !templates.length;
    if (!picker.hidden && !shown) templatesLoad(false);  // it just opened: read the list again
    shown = !picker.hidden;
  }

  // asked: "Actualizar la lista" was pressed, so a list that came back unchanged still says so
  function templatesLoad(asked) {
    var load = ++loads;
    hint.textContent = t.closed_hint + " " + t.loading;
    fetch(picker.dataset.templatesUrl, {
      credentials: "same-origin",
      headers: { "Accept": "application/json", "X-Tenant": root.dataset.tenant }
    })
      .then(function (r) { if (!r.ok) throw new Error(String(r.status)); return r.json(); })
      .then(function (data) {
        if (load !== loads) return;
        var before = signature(chosen());
        templates = Array.isArray(data.templates) ? data.templates : [];
        templatesRender(before, asked);
      })
      .catch(function () {  // the list known so far stays usable
        if (load === loads) hint.textContent = t.closed_hint + " " + t.load_failed;
      });
  }
  function signature(item) {
    return item ? JSON.stringify([item.id, item.body_text, item.variables]) : "";
  }
  function templatesRender(before, asked) {  // before: the chosen template as it was
    var previous = select.value;
    select.textContent = "";
    templates.forEach(function (item) {
      var language = item.language_label || item.language;
      select.appendChild(new Option(item.name + " (" + language + ")", String(item.id)));
    });
    select.value = previous;
    if (select.selectedIndex < 0 && templates.length) select.selectedIndex = 0;
    select.hidden = !templates.length;
    var more = !templates.length ? " " + t.no_templates : asked ? " " + t.reloaded : "";
    hint.textContent = t.closed_hint + more;
    if (signature(chosen()) !== before) renderVars();  // what was typed stays if unchanged
    tick();
  }

  function renderVars() {
    vars.textContent = "";
    var item = chosen();
    (item ? item.variables : []).forEach(function (name) {
      var label = document.createElement("label");
      label.textContent = fmt(t.variable, { name: name });
      var input = document.createElement("input");
      input.type = "text";
      input.maxLength = 1024;
      input.dataset.variable = name;
      input.addEventListener("input", renderPreview);
      label.appendChild(input);
      vars.appendChild(label);
    });
    clientKey = "";
    renderPreview();
  }
  function renderPreview() {
    var item = chosen();
    if (!item) { preview.textContent = t.no_templates; return; }
    var filled = {};
    vars.querySelectorAll("input").forEach(function (i) {
      filled[i.dataset.variable] = i.value.trim() || "[" + i.dataset.variable + "]";
    });
    preview.textContent = (item.body_text || item.name).replace(/\{\{\s*(\w+)\s*\}\}/g, function (m, k) {
      return k in filled ? filled[k] : m;
    });
    clientKey = "";  // another content: another send
  }

  function showError(message) { errorBox.textContent = message; errorBox.hidden = false; }
  function newKey() {
    if (window.crypto && window.crypto.randomUUID) return window.crypto.randomUUID();
    return String(Date.now()) + "-" + Math.random().toString(36).slice(2);
  }

  picker.addEventListener("submit", function (event) {
    event.preventDefault();
    var item = chosen();
    if (!item || busy) return;
    var filled = values();
    if (filled.some(function (v) { return !v; })) { showError(t.fill); return; }
    errorBox.hidden = true;
    if (!clientKey) clientKey = newKey();
    busy = true;
    tick();
    var csrf = replyForm.querySelector("input[name=csrfmiddlewaretoken]");
    fetch(picker.dataset.url, {
      method: "POST",
      credentials: "same-origin",
      headers: {
        "Content-Type": "application/json", "Accept": "application/json",
        "X-CSRFToken": csrf ? csrf.value : "", "X-Tenant": root.dataset.tenant
      },
      body: JSON.stringify({ template_id: item.id, variables: filled, client_key: clientKey })
    })
      .then(function (r) {
        return r.json().catch(function () { return {}; }).then(function (data) {
          if (!r.ok) { showError((data.error && data.error.message) || t.generic); return; }
          notice.textContent = t.sent;
          vars.querySelectorAll("input").forEach(function (i) { i.value = ""; });
          renderPreview();
        });
      })
      .catch(function () { showError(t.network); })  // the same key on a retry: sent once
      .then(function () {
        busy = false;
        tick();
        document.dispatchEvent(new CustomEvent("inbox:refresh"));
      });
  });

  document.addEventListener("inbox:state", function (event) {
    var s = event.detail || {};
    closesAt = s.window_closes_at || "";
    badge.title = s.window_title || "";  // the absolute end, with its zone
    canReply = !!s.can_reply;
    tick();
  });
  replyForm.querySelectorAll("input[name=mode]").forEach(function (radio) {
    radio.addEventListener("change", tick);
  });
  select.addEventListener("change", renderVars);
  reload.addEventListener("click", function () { templatesLoad(true); });
  if (!templates.length) { hint.textContent = t.closed_hint + " " + t.no_templates; select.hidden = true; }
  renderVars();
  tick();
  setInterval(tick, 1000);
})();
