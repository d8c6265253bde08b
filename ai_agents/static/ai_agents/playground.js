// The agent's playground and saved tests (templates/admin/ai_agents/agent/playground.html):
// acts through the REST API (session + CSRF + X-Tenant); every word it writes comes from the
// page's translated labels (#pg-labels), every value is set as text, never as HTML.
(function () {
  "use strict";
  var root = document.getElementById("playground");
  if (!root) return;
  var t = JSON.parse(document.getElementById("pg-labels").textContent);
  var api = root.dataset.apiUrl;
  var historyMax = parseInt(root.dataset.historyMax, 10);
  var history = [];
  var $ = function (id) { return document.getElementById(id); };
  var errorBox = $("pg-error");

  function csrf() {
    var f = document.querySelector("input[name=csrfmiddlewaretoken]");
    return f ? f.value : "";
  }
  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }
  function fill(list, items, make) {
    list.replaceChildren();
    if (!items.length) { list.appendChild(el("li", "", t.none)); return; }
    items.forEach(function (item) { list.appendChild(make(item)); });
  }
  function format(template, values) {
    return template.replace(/%\((\w+)\)s/g, function (_, k) { return values[k]; });
  }
  function showError(message) { errorBox.textContent = message; errorBox.hidden = false; }
  function call(method, path, body) {
    errorBox.hidden = true;
    return fetch(api + path, {
      method: method,
      credentials: "same-origin",
      headers: {
        "Content-Type": "application/json",
        "Accept": "application/json",
        "X-CSRFToken": csrf(),
        "X-Tenant": root.dataset.tenant
      },
      body: body === undefined ? undefined : JSON.stringify(body)
    }).then(function (r) {
      if (r.status === 204) return {};
      return r.json().catch(function () { return {}; }).then(function (data) {
        if (!r.ok) throw new Error((data.error && data.error.message) || t.generic);
        return data;
      });
    }, function () { throw new Error(t.network); });
  }
  function value(v) { return v === null || v === undefined || v === "" ? "—" : v; }

  // --- the playground ---------------------------------------------------------------------
  function showHistory() {
    fill($("pg-history"), history, function (h) {
      return el("li", "pg-turn-" + h.role, (h.role === "user" ? t.you : t.agent) + ": " + h.text);
    });
    if (!history.length) $("pg-history").replaceChildren();
  }
  function passage(p) {
    var li = el("li", "pg-passage");
    li.appendChild(el("span", "pg-score", p.score.toFixed(3)));
    li.appendChild(document.createTextNode(" " + p.title + (p.heading ? " › " + p.heading : "")));
    li.appendChild(el("div", "pg-passage-text", p.content));
    return li;
  }
  function trigger(tr) {
    var li = el("li", "pg-trigger" + (tr.fired ? " fired" : ""),
      tr.label + " (" + tr.priority_label + ")" + (tr.condition_text ? ": " + tr.condition_text : "") +
      " — " + (tr.fired ? t.fired : t.not_fired));
    return li;
  }
  function tool(c) {
    var state = c.skipped ? t.skipped : (c.ok ? "ok" : value(c.error));
    return el("li", "", c.tool + " " + JSON.stringify(c.arguments) + " — " + state + " (" + c.duration_ms + " ms)");
  }
  function show(r) {
    $("pg-result").hidden = false;
    $("pg-reply").textContent = r.reply || "—";
    var options = r.options || []; // the choices the customer would see as buttons or chips
    $("pg-options").hidden = !options.length;
    $("pg-options").replaceChildren.apply($("pg-options"), options.map(function (o) { return el("li", "", o.title); }));
    var esc = $("pg-escalation");
    esc.hidden = !r.escalation;
    esc.textContent = r.escalation ? t.escalated + " (" + r.escalation.reason_label + ", " + r.escalation.priority_label + "): " + r.escalation.detail : "";
    var notes = r.notes.slice();
    if (r.no_answer) notes.unshift(t.no_answer);
    if (r.error) notes.unshift(r.error);
    $("pg-notes").replaceChildren.apply($("pg-notes"), notes.map(function (n) { return el("li", "", n); }));
    fill($("pg-passages"), r.passages, passage);
    fill($("pg-triggers"), r.triggers, trigger);
    $("pg-intent").textContent = value(r.intent);
    $("pg-sentiment").textContent = value(r.sentiment);
    $("pg-confidence").textContent = value(r.confidence);
    $("pg-model").textContent = value(r.model);
    $("pg-tokens").textContent = r.usage.input_tokens + " / " + r.usage.output_tokens;
    $("pg-cost").textContent = r.usage.cost_usd;
    fill($("pg-tools"), r.tool_calls, tool);
    fill($("pg-timings"), Object.keys(r.timings_ms), function (k) { return el("li", "", k + ": " + r.timings_ms[k]); });
  }
  $("pg-form").addEventListener("submit", function (e) {
    e.preventDefault();
    var text = $("pg-text").value.trim();
    if (!text) return;
    var button = $("pg-send");
    button.disabled = true;
    button.setAttribute("aria-busy", "true");
    call("POST", "/test", { text: text, history: history.slice(-historyMax) }).then(function (r) {
      show(r);
      history.push({ role: "user", text: text });
      if (r.reply) history.push({ role: "assistant", text: r.reply });
      history = history.slice(-historyMax);
      showHistory();
      $("pg-text").value = "";
    }).catch(function (err) { showError(err.message); }).then(function () {
      button.disabled = false;
      button.removeAttribute("aria-busy");
    });
  });
  $("pg-reset").addEventListener("click", function () {
    history = [];
    showHistory();
    $("pg-result").hidden = true;
    $("pg-text").focus();
  });

  // --- saved tests ------------------------------------------------------------------------
  function state(passed) {
    if (passed === null || passed === undefined) return el("span", "", t.never);
    return el("span", passed ? "pg-passed" : "pg-failed", passed ? t.passed : t.failed);
  }
  function row(c, result) {
    var tr = el("tr");
    tr.dataset.caseId = c.id;
    tr.appendChild(el("td", "", c.question));
    tr.appendChild(el("td", "", c.expectation_label + (c.expected_text ? " «" + c.expected_text + "»" : "")));
    var cell = el("td");
    if (result && result.regression) cell.appendChild(el("span", "pg-regression", t.regression));
    else cell.appendChild(state(c.last_passed));
    if (result && result.why) cell.appendChild(el("div", "", result.why));
    if (result && result.reply_changed) cell.appendChild(el("div", "pg-changed", t.reply_changed));
    if (c.last_reply) cell.appendChild(el("div", "pg-passage-text", c.last_reply));
    tr.appendChild(cell);
    var actions = el("td");
    var remove = el("button", "button", t.delete);
    remove.type = "button";
    remove.setAttribute("aria-label", t.delete + ": " + c.question);
    remove.addEventListener("click", function () {
      call("DELETE", "/tests/" + c.id).then(load).catch(function (err) { showError(err.message); });
    });
    actions.appendChild(remove);
    tr.appendChild(actions);
    return tr;
  }
  function summary(run) {
    var box = $("pg-run-summary");
    box.replaceChildren();
    if (!run) return;
    box.appendChild(el("p", "", format(t.summary, run)));
    var ch = run.changes || {};
    if (ch.first_run) box.appendChild(el("p", "", t.first_run));
    else if (ch.config && ch.config.length) {
      box.appendChild(el("p", "", format(t.config_changed, { parts: ch.config.map(function (p) { return t[p] || p; }).join(", ") })));
    } else box.appendChild(el("p", "", t.config_same));
    if (ch.cases && ch.cases.length) box.appendChild(el("p", "", format(t.cases_changed, { n: ch.cases.length })));
    if (ch.replies && ch.replies.length) box.appendChild(el("p", "", format(t.replies_changed, { n: ch.replies.length })));
  }
  function load() {
    return call("GET", "/tests").then(function (data) {
      var byId = {};
      ((data.last_run && data.last_run.results) || []).forEach(function (r) { byId[r.id] = r; });
      var body = $("pg-cases");
      body.replaceChildren.apply(body, data.results.map(function (c) { return row(c, byId[c.id]); }));
      summary(data.last_run);
      if (data.current_run && !watching) watch(data.current_run);  // a run queued before this page
    }).catch(function (err) { showError(err.message); });
  }
  // A run goes on in the background (bulk worker): its progress is read every POLL_MS until it
  // is done (then the table and the summary show it) or failed (its reason in words).
  var POLL_MS = 1000;
  var watching = false;
  function progress(run) {
    $("pg-run").disabled = true;
    $("pg-run-summary").textContent = format(t.progress, { done: run.cases_done, total: run.cases_total });
  }
  function watch(run) {
    watching = true;
    progress(run);
    if (run.state === "done" || run.state === "failed") {
      watching = false;
      $("pg-run").disabled = false;
      return load().then(function () { if (run.state === "failed") showError(run.error || t.generic); });
    }
    return new Promise(function (resolve) { setTimeout(resolve, POLL_MS); }).then(function () {
      return call("GET", "/tests/runs/" + run.id);
    }).then(watch, function (err) {
      watching = false;
      $("pg-run").disabled = false;
      showError(err.message);
    });
  }
  $("pg-case-form").addEventListener("submit", function (e) {
    e.preventDefault();
    call("POST", "/tests", {
      question: $("pg-case-question").value,
      expectation: $("pg-case-expectation").value,
      expected_text: $("pg-case-text").value
    }).then(function () {
      $("pg-case-question").value = "";
      $("pg-case-text").value = "";
      return load();
    }).catch(function (err) { showError(err.message); });
  });
  $("pg-run").addEventListener("click", function () {
    var button = $("pg-run");
    button.disabled = true;
    $("pg-run-summary").textContent = t.running;
    call("POST", "/tests/run").then(watch, function (err) {
      button.disabled = false;
      showError(err.message);
    });
  });
  load();
})();
