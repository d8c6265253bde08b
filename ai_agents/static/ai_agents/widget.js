/* Web chat widget, no dependencies. On a page of an allowed origin:
 *   <script src="https://HOST/widget.js" data-key="PUBLIC_KEY" async></script>
 * Options: data-lang="es|en" (else navigator.language), data-open="true".
 * CSP: script-src HOST; connect-src HOST (and img-src for an avatar's host). No inline script or
 * style, no eval (the styles are a constructed stylesheet adopted by the shadow root).
 * Look: GET /config on load gives the binding's colour (its text colour chosen for contrast),
 * title, greeting, launcher text, position (host data-position=bottom-right|bottom-left) and
 * avatar. Host data-open while the panel is open; under 480 px wide the panel is full-screen.
 *
 * Stable DOM for tests (open shadow root of <div data-erp-webchat> at the end of <body>):
 *   [data-wc=launcher]  button (aria-expanded)      [data-wc=panel]   role=dialog, hidden when closed
 *   [data-wc=title]     title (else agent name)     [data-wc=close]   close button (44 px)
 *   [data-wc=avatar]    the binding's avatar (img, hidden without one)
 *   [data-wc=state]     data-state=bot|waiting|human ("Le atiende una persona" when human)
 *   [data-wc=greeting]  greeting, a bot bubble that is not a stored message
 *   [data-wc=error]     role=alert
 *   [data-wc=log]       role=log, aria-live=polite; holds [data-wc=message] items:
 *                       data-role=user|assistant, data-human=true|false, data-id (message id,
 *                       "" until stored), data-streaming=true while tokens arrive; inside them
 *                       [data-wc=author] and [data-wc=text]
 *   [data-wc=options]   chips under the latest bot answer: [data-wc=option] buttons (data-id),
 *                       "1. Title"; a click sends the title with the option's id; gone at the
 *                       next message
 *   [data-wc=note]      "your message reached the person" notes inside the log
 *   [data-wc=event]     a customer notice inside the log (data-notice=claim|release|close|
 *                       rating_thanks|comment_thanks): a person took over, handed back, closed
 *   [data-wc=typing]    role=status, "a person is typing…" while a staff member writes
 *   [data-wc=rating]    the survey after a close (shown while the state says rating_pending):
 *                       radios [data-wc=rate] 1-5 (labels of 44 px), [data-wc=rating-comment],
 *                       [data-wc=rating-send]; then [data-wc=rating-thanks] (role=status)
 *   [data-wc=input]     textarea (Enter sends, Shift+Enter new line)   [data-wc=send] button;
 *                       Enter while the previous reply is still being stored (its words
 *                       may all be on screen) keeps the text and sends it once that turn ends
 *   [data-wc=unread]    inside the launcher: how many replies arrived while the panel was
 *                       closed (hidden at 0; the launcher's aria-label then says it)
 * The session token lives in localStorage ("erp-webchat:<key>"), so history survives reloads;
 * "<store>:seen" keeps the time of the newest message the visitor has seen open. A visitor with
 * a session keeps polling while the panel is closed (every third interval, not while the page
 * is in a background tab), so a person's reply shows as a count on the launcher.
 * The widget also tells the server when the visitor types (POST /typing, every 3 s at most)
 * and which replies were shown with the panel open (POST /read).
 */
(function () {
  "use strict";
  var script = document.currentScript;
  var key = script && script.getAttribute("data-key");
  if (!key || !script.src || window["erpWebchat:" + key]) return;
  window["erpWebchat:" + key] = true;

  var api = new URL(script.src, location.href).origin + "/api/webchat/" + encodeURIComponent(key);
  var store = "erp-webchat:" + key;
  var lang = (script.getAttribute("data-lang") || navigator.language || "es").slice(0, 2).toLowerCase();
  if (lang !== "en") lang = "es";
  var T = lang === "en"
    ? { open: "Open chat", close: "Close chat", title: "Chat", send: "Send", input_label: "Type your message",
        error: "The message could not be sent.", unavailable: "The chat is not available now.",
        unread: "New messages: {n}" }
    : { open: "Abrir el chat", close: "Cerrar el chat", title: "Chat", send: "Enviar", input_label: "Escriba su mensaje",
        error: "No se pudo enviar el mensaje.", unavailable: "El chat no está disponible ahora.",
        unread: "Mensajes nuevos: {n}" };

  var CSS = [
    ":host{all:initial;position:fixed;right:16px;bottom:16px;z-index:2147483000;font:15px/1.4 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;color:#1b1f24}",
    ":host([data-position=bottom-left]){right:auto;left:16px}",
    "*{box-sizing:border-box}",
    "[hidden]{display:none!important}",
    ".sr{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}",
    "button,textarea{font:inherit}",
    "button:focus-visible,textarea:focus-visible{outline:3px solid #f5a623;outline-offset:2px}",
    ".badge{display:inline-block;min-width:20px;margin-left:8px;padding:0 6px;border-radius:10px;background:#c62828;color:#fff;font-size:12px;line-height:20px;text-align:center}",
    ".launcher{display:block;margin-left:auto;min-height:44px;min-width:44px;border:0;border-radius:28px;padding:12px 18px;background:var(--wc-primary,#1f5fbf);color:var(--wc-on-primary,#fff);cursor:pointer;box-shadow:0 2px 10px rgba(0,0,0,.25)}",
    ":host([data-position=bottom-left]) .launcher{margin-left:0;margin-right:auto}",
    ".panel{display:flex;flex-direction:column;width:min(370px,calc(100vw - 32px));height:min(540px,calc(100vh - 100px));margin-bottom:10px;background:#fff;border:1px solid #c9ced6;border-radius:12px;box-shadow:0 6px 24px rgba(0,0,0,.22);overflow:hidden}",
    ".head{display:flex;align-items:center;gap:8px;padding:10px 12px;background:var(--wc-primary,#1f5fbf);color:var(--wc-on-primary,#fff)}",
    ".avatar{width:32px;height:32px;border-radius:50%;object-fit:cover;background:#fff;flex:none}",
    ".head h2{flex:1;margin:0;font-size:16px}",
    ".x{min-width:44px;min-height:44px;border:0;background:transparent;color:inherit;font-size:24px;line-height:1;cursor:pointer;padding:0;border-radius:6px}",
    ".state{margin:0;padding:6px 12px;background:#fff4d6;color:#5b4200;font-size:13px}",
    ".log{flex:1;overflow-y:auto;margin:0;padding:12px;list-style:none;display:flex;flex-direction:column;gap:8px}",
    ".msg{max-width:85%;padding:8px 10px;border-radius:10px;background:#eef1f5;align-self:flex-start}",
    ".msg[data-role=user]{align-self:flex-end;background:#dbe8fb}",
    ".msg[data-human=true]{background:#e3f4e6}",
    ".who{display:block;font-size:12px;color:#555e6b}",
    ".txt{white-space:pre-wrap;overflow-wrap:anywhere}",
    ".chips{display:flex;flex-wrap:wrap;gap:6px;align-self:flex-start;max-width:95%}",
    ".chip{min-height:44px;padding:6px 12px;border:1px solid var(--wc-primary,#1f5fbf);border-radius:22px;background:#fff;color:var(--wc-primary,#1f5fbf);cursor:pointer;text-align:left}",
    ".note{align-self:center;font-size:13px;color:#555e6b;text-align:center}",
    ".greet{white-space:pre-wrap;overflow-wrap:anywhere}",
    ".err{margin:0;padding:6px 12px;color:#8a1c1c;background:#fdecec;font-size:13px}",
    "form{display:flex;gap:8px;padding:10px;border-top:1px solid #e1e4e8}",
    "textarea{flex:1;resize:none;height:44px;padding:8px;border:1px solid #9aa3ae;border-radius:8px;color:inherit;font-size:16px}",
    ".send{min-height:44px;min-width:44px;border:0;border-radius:8px;padding:0 14px;background:var(--wc-primary,#1f5fbf);color:var(--wc-on-primary,#fff);cursor:pointer}",
    ".send:disabled{opacity:.6;cursor:default}",
    ".event{align-self:stretch;margin:2px 0;padding:6px 10px;border-left:4px solid #8a5a00;background:#fff8e6;color:#4a3500;font-size:13px;white-space:pre-wrap}",
    ".typing{margin:0;padding:4px 12px;color:#555e6b;font-size:13px;font-style:italic}",
    ".rating{margin:0;padding:10px 12px;border-top:1px solid #e1e4e8;background:#f7f9fc}",
    ".rating fieldset{border:0;margin:0;padding:0}",
    ".rating legend{padding:0;margin-bottom:6px;font-weight:600}",
    ".stars{display:flex;gap:6px}",
    ".stars input{position:absolute;opacity:0;width:1px;height:1px}",
    ".stars label{display:flex;align-items:center;justify-content:center;min-width:44px;min-height:44px;border:1px solid #9aa3ae;border-radius:8px;background:#fff;cursor:pointer;font-weight:600}",
    ".stars input:checked+label{background:var(--wc-primary,#1f5fbf);border-color:var(--wc-primary,#1f5fbf);color:var(--wc-on-primary,#fff)}",
    ".stars input:focus-visible+label{outline:3px solid #f5a623;outline-offset:2px}",
    ".scale{margin:4px 0 8px;font-size:12px;color:#555e6b}",
    ".rating textarea{display:block;width:100%;height:60px;margin:4px 0 8px}",
    ".rating .send{min-height:44px}",
    ".thanks{margin:0;padding:8px 12px;background:#e3f4e6;color:#1d4d27;font-size:14px}",
    // Phones: the open chat takes the whole screen (the launcher hides under it).
    "@media (max-width:480px){.panel{position:fixed;inset:0;width:100%;height:100%;margin:0;border:0;border-radius:0;box-shadow:none}:host([data-open]) .launcher{display:none}}"
  ].join("\n");

  function el(tag, attrs, text) {
    var node = document.createElement(tag);
    for (var name in attrs) node.setAttribute(name, attrs[name]);
    if (text) node.textContent = text;
    return node;
  }

  var host = el("div", { "data-erp-webchat": "" });
  var root = host.attachShadow({ mode: "open" });
  if (root.adoptedStyleSheets !== undefined && typeof CSSStyleSheet === "function") {
    var sheet = new CSSStyleSheet();
    sheet.replaceSync(CSS);
    root.adoptedStyleSheets = [sheet];
  } else {
    root.appendChild(el("style", {}, CSS)); // old browsers; blocked by a strict style-src
  }

  var panel = el("div", { "data-wc": "panel", "class": "panel", role: "dialog", "aria-modal": "false", "aria-labelledby": "wc-title", id: "wc-panel", hidden: "" });
  var head = el("div", { "class": "head" });
  var title = el("h2", { "data-wc": "title", id: "wc-title" }, T.title);
  var avatar = el("img", { "data-wc": "avatar", "class": "avatar", alt: "", referrerpolicy: "no-referrer", hidden: "" });
  avatar.addEventListener("error", function () { avatar.hidden = true; });
  var closeBtn = el("button", { "data-wc": "close", "class": "x", type: "button", "aria-label": T.close }, "×");
  head.append(avatar, title, closeBtn);
  var stateEl = el("p", { "data-wc": "state", "class": "state", "data-state": "bot", hidden: "" });
  var log = el("div", { "data-wc": "log", "class": "log", role: "log", "aria-live": "polite", "aria-relevant": "additions", "aria-labelledby": "wc-title" });
  var greet = el("div", { "data-wc": "greeting", "class": "msg greet", hidden: "" });
  log.appendChild(greet);
  var errorEl = el("p", { "data-wc": "error", "class": "err", role: "alert", hidden: "" });
  var form = el("form", { novalidate: "" });
  var label = el("label", { "for": "wc-input", "class": "sr" }, T.input_label);
  var input = el("textarea", { "data-wc": "input", id: "wc-input", rows: "1", maxlength: "4000" });
  var sendBtn = el("button", { "data-wc": "send", "class": "send", type: "submit" }, T.send);
  form.append(label, input, sendBtn);
  var typingEl = el("p", { "data-wc": "typing", "class": "typing", role: "status", hidden: "" });
  var rating = el("form", { "data-wc": "rating", "class": "rating", novalidate: "", hidden: "" });
  var fieldset = el("fieldset", {});
  var legend = el("legend", { id: "wc-rating-q" });
  var stars = el("div", { "class": "stars" });
  var rateInputs = [];
  for (var n = 1; n <= 5; n++) {
    var radio = el("input", { type: "radio", name: "wc-rating", id: "wc-rate-" + n, value: String(n), "data-wc": "rate-input" });
    rateInputs.push(radio);
    stars.append(radio, el("label", { "for": "wc-rate-" + n, "data-wc": "rate", "data-value": String(n) }, String(n)));
  }
  var scale = el("p", { "class": "scale" });
  fieldset.append(legend, stars, scale);
  var commentLabel = el("label", { "for": "wc-rating-comment" });
  var comment = el("textarea", { "data-wc": "rating-comment", id: "wc-rating-comment", maxlength: "2000" });
  var rateBtn = el("button", { "data-wc": "rating-send", "class": "send", type: "submit" });
  rating.append(fieldset, commentLabel, comment, rateBtn);
  var thanks = el("p", { "data-wc": "rating-thanks", "class": "thanks", role: "status", hidden: "" });
  panel.append(head, stateEl, log, typingEl, rating, thanks, errorEl, form);
  var launcher = el("button", { "data-wc": "launcher", "class": "launcher", type: "button", "aria-expanded": "false", "aria-controls": "wc-panel" });
  var launcherLabel = el("span", {}, T.open);
  var badge = el("span", { "data-wc": "unread", "class": "badge", "aria-hidden": "true", hidden: "" });
  launcher.append(launcherLabel, badge);
  root.append(panel, launcher);

  var token = read(store), texts = T, cursor = null, seen = {}, pollMs = 4000;
  var timer = null, busy = false, started = null, unread = 0, newest = null;
  var lastSeen = read(store + ":seen");
  var rated = false, reported = {}, lastTypingPing = 0;
  var queued = false; // Enter pressed while a send was in flight: the box is sent after it

  function read(name) { try { return localStorage.getItem(name); } catch (e) { return null; } }
  function write(name, value) {
    try { if (value === null) localStorage.removeItem(name); else localStorage.setItem(name, value); } catch (e) { /* storage blocked */ }
  }
  function t(name) { return texts[name] || T[name] || ""; }
  function showError(text) { errorEl.textContent = text || ""; errorEl.hidden = !text; }

  function call(method, path, body, accept) {
    var headers = { Accept: accept || "application/json" };
    if (token) headers["X-Webchat-Token"] = token;
    if (body) headers["Content-Type"] = "application/json";
    return fetch(api + path, { method: method, headers: headers, body: body ? JSON.stringify(body) : undefined, mode: "cors", credentials: "omit" });
  }

  function errorText(response) {
    return response.json().then(function (data) { return (data && data.error) || {}; }, function () { return {}; })
      .then(function (err) {
        if (response.status === 429) {
          var s = response.headers.get("Retry-After") || err.retry_after || "";
          return (texts.rate_limited || err.message || T.error).replace("{s}", s);
        }
        if (err.code === "text_too_long") return t("too_long") || err.message;
        return response.status === 404 || response.status === 403 ? t("unavailable") : T.error;
      });
  }

  function session() {
    if (started) return started;
    started = call("POST", "/sessions", { token: token || "", lang: lang }).then(function (r) {
      if (!r.ok) return errorText(r).then(function (text) { throw new Error(text); });
      return r.json();
    }).then(function (data) {
      token = data.token; write(store, token);
      configure(data);
      setState(data);
      return data;
    });
    started.catch(function (e) { started = null; showError(e.message || t("unavailable")); });
    return started;
  }

  // The texts and look from /config (on load) or /sessions; the owner's texts only ever go
  // through textContent, the colours only as validated hex.
  function configure(data) {
    texts = data.texts || texts; pollMs = data.poll_interval_ms || pollMs;
    title.textContent = t("title"); launcherLabel.textContent = panel.hidden ? t("open") : t("close"); sendBtn.textContent = t("send");
    label.textContent = t("input_label"); input.placeholder = t("placeholder");
    closeBtn.setAttribute("aria-label", t("close"));
    if (data.max_chars) input.setAttribute("maxlength", String(data.max_chars));
    greet.textContent = t("greeting"); greet.hidden = !greet.textContent;
    ratingTexts(); unreadShow();
    var look = data.appearance || {}, hex = /^#[0-9a-f]{6}$/i;
    if (hex.test(look.color || "") && hex.test(look.text_color || "")) {
      host.style.setProperty("--wc-primary", look.color);
      host.style.setProperty("--wc-on-primary", look.text_color);
    }
    host.setAttribute("data-position", look.position === "bottom-left" ? "bottom-left" : "bottom-right");
    var url = /^https:\/\//.test(look.avatar_url || "") ? look.avatar_url : "";
    if (url && avatar.getAttribute("src") !== url) avatar.src = url;
    avatar.hidden = !url;
  }

  function setState(data) {
    var state = data.state || "bot";
    stateEl.setAttribute("data-state", state);
    stateEl.textContent = state === "human" ? t("state_human") : state === "waiting" ? t("state_waiting") : "";
    stateEl.hidden = !stateEl.textContent;
    typingEl.textContent = data.staff_typing ? t("staff_typing") : "";
    typingEl.hidden = !data.staff_typing;
    if (data.rating_pending && !rated) rating.hidden = false;
    else if (!data.rating_pending) rating.hidden = true;
  }

  function ratingTexts() {
    legend.textContent = t("rating_question");
    scale.textContent = t("rating_low") + " · " + t("rating_high");
    commentLabel.textContent = t("rating_comment");
    rateBtn.textContent = t("rating_send");
    rateInputs.forEach(function (radio) { radio.setAttribute("aria-label", t("rating_star").replace("{n}", radio.value)); });
  }

  function bubble(msg) {
    if (msg.notice) { // what a person did (took over, handed back, closed): not a bot answer
      var ev = el("div", { "data-wc": "event", "class": "event", "data-notice": msg.notice, "data-id": msg.id || "" }, msg.text || "");
      if (msg.id) seen[msg.id] = true;
      log.appendChild(ev);
      log.scrollTop = log.scrollHeight;
      return ev;
    }
    chipsClear(); // any new message ends the choice
    var human = !!msg.human;
    var li = el("div", { "data-wc": "message", "class": "msg", "data-role": msg.role, "data-human": String(human), "data-id": msg.id || "" });
    var who = msg.role === "user" ? t("you") : human ? (msg.author_name || t("person")) : t("bot");
    li.append(el("span", { "data-wc": "author", "class": "who" }, who), el("span", { "data-wc": "text", "class": "txt" }, msg.text || ""));
    if (msg.id) seen[msg.id] = true;
    log.appendChild(li);
    log.scrollTop = log.scrollHeight;
    return li;
  }

  // The choices of a bot answer, under it (only the latest answer keeps them).
  function chips(li, options) {
    chipsClear();
    if (!options || !options.length || !li.parentNode) return;
    var box = el("div", { "data-wc": "options", "class": "chips", role: "group", "aria-label": t("options") });
    options.forEach(function (option, i) { // numbered: typing "2" picks the second (option_pick)
      var button = el("button", { "data-wc": "option", "class": "chip", type: "button", "data-id": option.id || "" }, i + 1 + ". " + (option.title || ""));
      if (option.description) button.title = option.description;
      button.addEventListener("click", function () { if (!busy) send(option.title || "", option.id || ""); });
      box.appendChild(button);
    });
    li.parentNode.insertBefore(box, li.nextSibling);
    log.scrollTop = log.scrollHeight;
  }
  function chipsClear() {
    log.querySelectorAll("[data-wc=options]").forEach(function (box) { box.remove(); });
  }

  function time(iso) { return Date.parse(String(iso || "").replace(/(\.\d{3})\d+/, "$1")) || 0; }

  function unreadShow() {
    badge.textContent = String(unread); badge.hidden = !unread;
    if (unread) launcher.setAttribute("aria-label", launcherLabel.textContent + ". " + t("unread").replace("{n}", unread));
    else launcher.removeAttribute("aria-label");
  }

  function seenMark() { if (newest) { lastSeen = newest; write(store + ":seen", lastSeen); } }

  // After a poll (`fresh`: the messages not shown before, `list`: all it returned). Open, all
  // is seen; closed, replies newer than the mark are counted, and the mark stays (a reload
  // counts them again from the history). A browser without a mark counts nothing.
  function arrived(fresh, list) {
    if (list.length) newest = list[list.length - 1].created_at;
    if (panel.hidden && lastSeen) {
      fresh.forEach(function (m) { if (m.role === "assistant" && time(m.created_at) > time(lastSeen)) unread++; });
      unreadShow();
    } else {
      seenMark();
    }
  }

  function note(text) {
    log.appendChild(el("div", { "data-wc": "note", "class": "note" }, text));
    log.scrollTop = log.scrollHeight;
  }

  function poll(retried) {
    // 10 s of overlap (ids dedupe): a row committed late with an earlier time is not missed.
    var from = cursor && Date.parse(cursor.replace(/(\.\d{3})\d+/, "$1")) - 10000;
    var query = cursor ? "?after=" + encodeURIComponent(from ? new Date(from).toISOString() : cursor) : "";
    return call("GET", "/messages" + query).then(function (r) {
      if (r.status === 401 && !retried) { // expired or revoked: a new visitor session
        token = null; write(store, null); started = null; cursor = null;
        if (panel.hidden) return; // closed: the next opening starts one
        return session().then(function () { return poll(true); });
      }
      if (!r.ok) return;
      return r.json().then(function (data) {
        if (busy) return; // a send is streaming: the poll after it shows what was stored
        var list = data.messages || [];
        var fresh = list.filter(function (m) { return !seen[m.id]; });
        var shown = fresh.map(bubble);
        var last = fresh[fresh.length - 1];
        if (last && last.role === "assistant" && last.options && last.options.length) chips(shown[shown.length - 1], last.options);
        arrived(fresh, list);
        if (list.length) cursor = list[list.length - 1].created_at;
        setState(data);
        readReport();
      });
    }).catch(function () { /* offline: the next poll retries */ });
  }

  function schedule() {
    clearTimeout(timer);
    if (panel.hidden && !token) return;
    var closed = panel.hidden;
    timer = setTimeout(function () {
      var skip = busy || (closed && document.hidden); // a background tab asks nothing
      (skip ? Promise.resolve() : poll()).then(schedule);
    }, closed ? pollMs * 3 : pollMs);
  }

  function open(focus) {
    panel.hidden = false; launcher.setAttribute("aria-expanded", "true"); launcherLabel.textContent = t("close");
    host.setAttribute("data-open", "");
    write(store + ":open", "1");
    unread = 0; unreadShow(); seenMark();
    if (focus) input.focus(); // not when reopening after a reload: the page keeps its focus
    session().then(function () { return poll(); }).then(schedule, function () { /* shown */ });
  }

  function close() {
    panel.hidden = true; launcher.setAttribute("aria-expanded", "false"); launcherLabel.textContent = t("open");
    host.removeAttribute("data-open");
    write(store + ":open", null);
    launcher.focus();
    schedule(); // slower, while the visitor has a session
  }

  function parseEvents(buffer, handle) {
    var parts = buffer.split("\n\n");
    for (var i = 0; i < parts.length - 1; i++) {
      var name = "message", data = "";
      parts[i].split("\n").forEach(function (line) {
        if (line.indexOf("event:") === 0) name = line.slice(6).trim();
        else if (line.indexOf("data:") === 0) data += line.slice(5).trim();
      });
      try { handle(name, data ? JSON.parse(data) : {}); } catch (e) { /* a malformed event */ }
    }
    return parts[parts.length - 1];
  }

  function send(text, optionId) {
    busy = true; sendBtn.disabled = true; showError(""); thanks.hidden = true;
    var mine = bubble({ role: "user", text: text });
    var reply = bubble({ role: "assistant", text: "" });
    var replyText = reply.querySelector("[data-wc=text]");
    reply.setAttribute("data-streaming", "true"); reply.setAttribute("aria-busy", "true");
    var clientId = Date.now().toString(36) + Math.random().toString(36).slice(2, 10);
    var failed = false; // a refused or broken send: the queued text is not sent after it
    var answered = []; // the options of the reply, shown as chips once it is complete
    function finish() {
      busy = false; sendBtn.disabled = false;
      reply.removeAttribute("data-streaming"); reply.setAttribute("aria-busy", "false");
      if (!replyText.textContent) reply.remove();
      else if (answered.length) chips(reply, answered);
      if (!mine.getAttribute("data-id")) mine.remove(); // not confirmed: the poll shows it if stored
    }
    function handle(name, data) {
      if (name === "token") { replyText.textContent += data.text || ""; log.scrollTop = log.scrollHeight; }
      else if (name === "done") {
        if (data.message_id) { mine.setAttribute("data-id", data.message_id); seen[data.message_id] = true; }
        if (data.reply) {
          reply.setAttribute("data-id", data.reply.id); seen[data.reply.id] = true; replyText.textContent = data.reply.text;
          answered = data.reply.options || [];
        }
        else {
          replyText.textContent = ""; // a person took over while the bot wrote: its words are dropped
          if (data.state === "human" || data.state === "waiting") note(t("delivered_to_person"));
        }
        setState(data);
      } else if (name === "error") {
        failed = true;
        showError(data.code === "rate_limited" ? (texts.rate_limited || T.error).replace("{s}", data.retry_after || "") : T.error);
      }
    }
    return session().then(function () {
      var body = { text: text, client_message_id: clientId };
      if (optionId) body.option_id = optionId;
      return call("POST", "/messages", body, "text/event-stream");
    }).then(function (r) {
      if (!r.ok) { failed = true; return errorText(r).then(function (msg) { input.value = text; showError(msg); }); }
      if (!r.body || !window.TextDecoder) return r.text().then(function (all) { parseEvents(all + "\n\n", handle); });
      var reader = r.body.getReader(), decoder = new TextDecoder(), buffer = "";
      function pump() {
        return reader.read().then(function (chunk) {
          if (chunk.done) { parseEvents(buffer + "\n\n", handle); return; }
          buffer = parseEvents(buffer + decoder.decode(chunk.value, { stream: true }), handle);
          return pump();
        });
      }
      return pump();
    }).catch(function () { failed = true; showError(T.error); }).then(function () {
      finish();
      return poll(); // moves the cursor past what was just shown
    }).then(function () {
      var next = queued && !failed && !busy ? input.value.trim() : "";
      queued = false;
      if (next) { input.value = ""; send(next); }
    });
  }

  // The replies shown with the panel open were read (sent once each).
  function readReport() {
    if (panel.hidden || !token) return;
    var ids = [];
    log.querySelectorAll("[data-wc=message][data-role=assistant]").forEach(function (li) {
      var id = li.getAttribute("data-id");
      if (id && !reported[id]) { reported[id] = true; ids.push(id); }
    });
    if (ids.length) call("POST", "/read", { ids: ids.slice(-200) }).catch(function () { /* best effort */ });
  }

  input.addEventListener("input", function () {
    var now = Date.now();
    if (!token || !input.value.trim() || now - lastTypingPing < 3000) return;
    lastTypingPing = now;
    call("POST", "/typing", {}).catch(function () { /* best effort */ });
  });

  rating.addEventListener("submit", function (e) {
    e.preventDefault();
    var chosen = rateInputs.filter(function (radio) { return radio.checked; })[0];
    if (!chosen) { showError(t("rating_required")); rateInputs[0].focus(); return; }
    rateBtn.disabled = true; showError("");
    call("POST", "/rating", { rating: Number(chosen.value), text: comment.value.trim() }).then(function (r) {
      if (r.ok || r.status === 409) {
        rated = true; rating.hidden = true;
        thanks.textContent = t("rating_thanks"); thanks.hidden = false;
        return;
      }
      return r.json().then(function (data) { showError((data && data.error && data.error.message) || T.error); });
    }).catch(function () { showError(T.error); }).then(function () { rateBtn.disabled = false; });
  });

  launcher.addEventListener("click", function () { if (panel.hidden) open(true); else close(); });
  closeBtn.addEventListener("click", close);
  panel.addEventListener("keydown", function (e) { if (e.key === "Escape") { e.preventDefault(); close(); } });
  input.addEventListener("keydown", function (e) {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); form.requestSubmit ? form.requestSubmit() : form.dispatchEvent(new Event("submit", { cancelable: true })); }
  });
  form.addEventListener("submit", function (e) {
    e.preventDefault();
    var text = input.value.trim();
    if (!text) return;
    if (busy) { queued = true; return; } // the reply before is still being stored: sent after it
    input.value = "";
    send(text);
  });

  function mount() {
    document.body.appendChild(host);
    if (read(store + ":open") || script.getAttribute("data-open") === "true") open(false);
    else if (token) poll().then(schedule); // a returning visitor: replies while away
  }
  // The look first (a simple CORS GET, no session): the launcher appears once, as configured;
  // if the config cannot be had, with the defaults.
  var configured = fetch(api + "/config?lang=" + lang, { mode: "cors", credentials: "omit" }).then(function (r) {
    return r.ok ? r.json().then(configure) : null;
  }).catch(function () { /* defaults */ });
  function start() { configured.then(mount); }
  if (document.body) start(); else document.addEventListener("DOMContentLoaded", start);
})();
