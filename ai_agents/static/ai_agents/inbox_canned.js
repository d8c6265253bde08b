// Canned replies in the conversation composer: typing "/" at the start of the box (then more of
// a shortcut: "/envio") opens a list of the tenant's saved replies whose shortcut starts with,
// or whose title contains, what follows the "/". Arrow keys move, Enter or a click inserts the
// reply with its variables ({{contact.name}}, {{agent.name}}, ...) filled in by the server for
// this conversation and this staff member; Esc or Tab closes the list.
//
// A <textarea> cannot take role="combobox" in HTML, so this is the ARIA "textbox with a listbox
// popup": aria-autocomplete="list" + aria-controls on the box, aria-activedescendant pointing at
// the highlighted option, and a polite status line that says how many replies match.
(function () {
  "use strict";
  var root = document.getElementById("inbox-conversation");
  var text = document.getElementById("inbox-reply-text");
  var box = document.getElementById("inbox-canned");
  var status = document.getElementById("inbox-canned-status");
  if (!root || !text || !box) return;
  var t = JSON.parse(document.getElementById("inbox-i18n").textContent);
  var form = document.getElementById("inbox-reply-form");
  var items = [];
  var active = -1;
  var asked = 0;

  function headers(json) {
    var h = { "Accept": "application/json", "X-Tenant": root.dataset.tenant };
    if (json) {
      h["Content-Type"] = "application/json";
      var token = form.querySelector("input[name=csrfmiddlewaretoken]");
      h["X-CSRFToken"] = token ? token.value : "";
    }
    return h;
  }

  function query() {
    var m = /^\/(\S*)$/.exec(text.value);
    return m ? m[1] : null;
  }

  function close() {
    box.hidden = true;
    box.textContent = "";
    items = [];
    active = -1;
    text.removeAttribute("aria-activedescendant");
  }

  function highlight(index) {
    active = index;
    Array.prototype.forEach.call(box.children, function (li, i) {
      li.setAttribute("aria-selected", i === index ? "true" : "false");
    });
    if (index < 0) { text.removeAttribute("aria-activedescendant"); return; }
    var li = box.children[index];
    text.setAttribute("aria-activedescendant", li.id);
    li.scrollIntoView({ block: "nearest" });
  }

  function show(results) {
    box.textContent = "";
    items = results;
    results.forEach(function (reply, i) {
      var li = document.createElement("li");
      li.id = "inbox-canned-" + i;
      li.setAttribute("role", "option");
      var cut = document.createElement("span");
      cut.className = "shortcut";
      cut.textContent = "/" + reply.shortcut;
      var title = document.createElement("span");
      title.className = "title";
      title.textContent = reply.title;
      li.appendChild(cut);
      li.appendChild(title);
      // mousedown, not click: the box keeps the focus.
      li.addEventListener("mousedown", function (event) { event.preventDefault(); pick(i); });
      box.appendChild(li);
    });
    box.hidden = results.length === 0;
    status.textContent = results.length
      ? t.canned_count.replace("%(n)s", String(results.length)) : t.canned_none;
    highlight(results.length ? 0 : -1);
  }

  function lookup() {
    var q = query();
    if (q === null || text.disabled) { close(); return; }
    var mine = ++asked;
    var url = root.dataset.cannedUrl + "?tenant=" + encodeURIComponent(root.dataset.tenantId)
      + "&q=" + encodeURIComponent(q);
    fetch(url, { credentials: "same-origin", headers: headers(false) })
      .then(function (r) { if (!r.ok) throw new Error(String(r.status)); return r.json(); })
      .then(function (data) {
        if (mine !== asked || query() === null) return;
        show(data.results || []);
      })
      .catch(function () { if (mine === asked) close(); });
  }

  function pick(index) {
    var reply = items[index];
    if (!reply) return;
    close();
    fetch(root.dataset.cannedUrl + "/" + reply.id + "/render", {
      method: "POST",
      credentials: "same-origin",
      headers: headers(true),
      body: JSON.stringify({ conversation_id: root.dataset.conversationId })
    })
      .then(function (r) { if (!r.ok) throw new Error(String(r.status)); return r.json(); })
      .then(function (data) {
        text.value = data.text;
        text.focus();
        text.setSelectionRange(text.value.length, text.value.length);
        text.dispatchEvent(new Event("input", { bubbles: true }));
      })
      .catch(function () { status.textContent = t.generic; });
  }

  text.addEventListener("input", lookup);
  text.addEventListener("blur", function () { setTimeout(close, 150); });
  text.addEventListener("keydown", function (event) {
    if (box.hidden) return;
    var n = items.length;
    if (event.key === "ArrowDown") {
      event.preventDefault();
      highlight((active + 1) % n);
    } else if (event.key === "ArrowUp") {
      event.preventDefault();
      highlight((active - 1 + n) % n);
    } else if (event.key === "Enter" && !event.ctrlKey && !event.metaKey && active >= 0) {
      event.preventDefault();
      event.stopPropagation();
      pick(active);
    } else if (event.key === "Escape") {
      event.preventDefault();
      event.stopPropagation();
      close();
    } else if (event.key === "Tab") {
      close();
    }
  });
})();
