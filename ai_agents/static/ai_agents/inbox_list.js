// Staff inbox list: "cargar más", refresh (live events when the page has them, polling
// otherwise) and the keys j/k (move), Enter (open), "/" (search). The cards always come from
// the server (?fragment=cards: the same template as the first load). No external code.
(function () {
  "use strict";

  var list = document.getElementById("inbox-cards");
  if (!list) return;
  var root = document.getElementById("inbox");
  var search = document.getElementById("inbox-q");
  var more = document.getElementById("inbox-more");
  var empty = document.getElementById("inbox-empty");
  var selectedId = "";

  function cards() { return Array.prototype.slice.call(list.querySelectorAll(".inbox-card")); }

  function select(card, focus) {
    cards().forEach(function (c) { c.classList.remove("selected"); c.removeAttribute("aria-current"); });
    if (!card) { selectedId = ""; return; }
    card.classList.add("selected");
    card.setAttribute("aria-current", "true");
    selectedId = card.dataset.conversationId;
    if (focus) {
      var link = card.querySelector(".card-open");
      if (link) link.focus();
      card.scrollIntoView({ block: "nearest" });
    }
  }

  function move(step) {
    var all = cards();
    if (!all.length) return;
    var at = all.findIndex(function (c) { return c.dataset.conversationId === selectedId; });
    var next = at < 0 ? (step > 0 ? 0 : all.length - 1) : Math.min(all.length - 1, Math.max(0, at + step));
    select(all[next], true);
  }

  function typing(target) {
    if (!target || !target.tagName) return false;
    var tag = target.tagName.toLowerCase();
    return tag === "input" || tag === "textarea" || tag === "select" || target.isContentEditable;
  }

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) return;
    if (event.key === "j") { event.preventDefault(); move(1); }
    else if (event.key === "k") { event.preventDefault(); move(-1); }
    else if (event.key === "/" && search) { event.preventDefault(); search.focus(); search.select(); }
    else if (event.key === "Enter" && selectedId && !(event.target.closest && event.target.closest("a, button, summary"))) {
      var card = list.querySelector('[data-conversation-id="' + selectedId + '"] .card-open');
      if (card) { event.preventDefault(); card.click(); }
    }
  });
  list.addEventListener("focusin", function (event) {
    var card = event.target.closest(".inbox-card");
    if (card && card.dataset.conversationId !== selectedId) select(card, false);
  });

  if (!root) return; // the contact page: keys only

  var query = root.dataset.fragmentQuery;
  var busy = false;

  function fetchCards(extra) {
    return fetch("?" + query + extra, { credentials: "same-origin", headers: { "Accept": "application/json" } })
      .then(function (r) { if (!r.ok) throw new Error(String(r.status)); return r.json(); });
  }

  function showCounts(counts) {
    Object.keys(counts || {}).forEach(function (tab) {
      var span = root.querySelector('[data-count="' + tab + '"]');
      if (span) span.textContent = String(counts[tab]);
    });
  }

  function showMore(cursor) {
    more.dataset.after = cursor || "";
    more.hidden = !cursor;
    if (cursor) {
      var url = new URL(more.href, window.location.href);
      url.searchParams.set("after", cursor);
      more.href = url.pathname + url.search;
    }
  }

  if (more) {
    more.addEventListener("click", function (event) {
      event.preventDefault();
      if (busy || !more.dataset.after) return;
      busy = true;
      fetchCards("&after=" + encodeURIComponent(more.dataset.after))
        .then(function (data) {
          list.insertAdjacentHTML("beforeend", data.html);
          showMore(data.next);
          showCounts(data.counts);
        })
        .catch(function () {})
        .then(function () { busy = false; });
    });
  }

  function refresh() {
    if (busy) return;
    busy = true;
    var shown = Math.max(cards().length, 25);
    var hadFocus = document.activeElement && list.contains(document.activeElement);
    fetchCards("&limit=" + shown)
      .then(function (data) {
        list.innerHTML = data.html;
        showCounts(data.counts);
        showMore(data.next);
        if (empty) empty.hidden = cards().length > 0;
        var again = selectedId && list.querySelector('[data-conversation-id="' + selectedId + '"]');
        if (again) select(again, hadFocus);
      })
      .catch(function () {})
      .then(function () { busy = false; });
  }

  // Live events (inbox_live.js, loaded by the page's alerts block) carry ids only: any change
  // re-reads the cards, a burst of events once (typing indicators change no card).
  var pending = null;
  function soon() {
    if (pending) return;
    pending = setTimeout(function () { pending = null; refresh(); }, 300);
  }
  var live = window.InboxLive;
  if (live && typeof live.subscribe === "function") {
    live.subscribe(function (event) { if (event.kind !== "typing") soon(); });
  } else {
    var every = (parseInt(root.dataset.refreshSeconds, 10) || 10) * 1000;
    setInterval(refresh, every);
  }
})();
