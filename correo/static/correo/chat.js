// The secretary's chat. The conversation lives only in this closure: nothing is written to
// localStorage, sessionStorage or cookies, so a reload starts over.
(function () {
  "use strict";
  var root = document.querySelector(".correo");
  if (!root) return;
  var t = JSON.parse(document.getElementById("correo-i18n").textContent);
  var askUrl = root.dataset.askUrl;
  var historyMax = parseInt(root.dataset.historyMax, 10) || 12;
  var connectUrl = root.dataset.connectUrl;
  var form = document.getElementById("ask-form");
  var input = document.getElementById("question");
  var list = document.getElementById("messages");
  var errorBox = document.getElementById("error");
  var busy = document.getElementById("busy");
  var send = document.getElementById("send");
  var history = [];

  function fmt(text, values) {
    return text.replace(/%\((\w+)\)s/g, function (_m, k) { return String(values[k]); });
  }

  function csrfToken() {
    var field = form.querySelector("input[name=csrfmiddlewaretoken]");
    return field ? field.value : "";
  }

  function addMessage(role, text, meta) {
    var li = document.createElement("li");
    li.className = role;
    var who = document.createElement("span");
    who.className = "who";
    who.textContent = role === "user" ? t.you : t.secretary;
    var body = document.createElement("span");
    body.className = "text";
    body.textContent = text;
    li.appendChild(who);
    li.appendChild(body);
    if (meta) {
      var m = document.createElement("span");
      m.className = "meta";
      m.textContent = meta;
      li.appendChild(m);
    }
    list.appendChild(li);
    li.scrollIntoView({ block: "nearest" });
  }

  function showError(text, link) {
    errorBox.textContent = text;
    if (link) {
      errorBox.appendChild(document.createTextNode(" "));
      var a = document.createElement("a");
      a.href = connectUrl;
      a.textContent = t.connect;
      errorBox.appendChild(a);
    }
    errorBox.hidden = false;
  }

  function errorFor(status, body, response) {
    var err = (body && body.error) || {};
    if (status === 429) {
      var seconds = response.headers.get("Retry-After") || err.retry_after || "?";
      return [fmt(t.rate, { seconds: seconds }), false];
    }
    if (err.code === "mailbox_not_connected") return [t.disconnected, true];
    if (err.code === "deadline_exceeded" && err.message) return [err.message, false];
    if (status === 502 || status === 504) return [t.timeout, false];
    return [err.message || t.generic, false];
  }

  function setBusy(on) {
    busy.hidden = !on;
    send.disabled = on;
    form.setAttribute("aria-busy", on ? "true" : "false");
  }

  form.addEventListener("submit", function (event) {
    event.preventDefault();
    var question = input.value.trim();
    errorBox.hidden = true;
    if (!question) { showError(t.empty); input.focus(); return; }
    var payload = { question: question, history: history.slice(-historyMax) };
    addMessage("user", question);
    setBusy(true);
    fetch(askUrl, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRFToken": csrfToken() },
      body: JSON.stringify(payload),
    }).then(function (response) {
      return response.json().catch(function () { return null; }).then(function (body) {
        if (response.ok && body) {
          history.push({ role: "user", content: question });
          history.push({ role: "assistant", content: body.answer });
          history = history.slice(-historyMax);
          var meta = fmt(t.meta, {
            rounds: body.tool_rounds,
            seconds: (body.duration_ms / 1000).toFixed(1),
          });
          addMessage("assistant", body.answer, meta);
          input.value = "";
        } else {
          var e = errorFor(response.status, body, response);
          showError(e[0], e[1]);
        }
      });
    }).catch(function () {
      showError(t.network);
    }).then(function () {
      setBusy(false);
      input.focus();
    });
  });

  input.addEventListener("keydown", function (event) {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      form.requestSubmit();
    }
  });

  document.getElementById("clear").addEventListener("click", function () {
    history = [];
    list.textContent = "";
    errorBox.hidden = true;
    input.focus();
  });
})();
