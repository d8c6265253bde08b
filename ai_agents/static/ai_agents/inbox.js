// Staff inbox list: the rows are re-read when InboxLive (inbox_live.js) reports a change, and on
// a timer. The conversation page is inbox_conversation.js. No external code, no storage.
(function () {
  "use strict";

  function refreshList(table) {
    var url = table.dataset.refreshUrl;
    var every = (parseInt(table.dataset.pollSeconds, 10) || 10) * 1000;
    var body = document.getElementById("inbox-rows");
    function load() {
      fetch(url, { credentials: "same-origin", headers: { "X-Requested-With": "fetch" } })
        .then(function (r) { return r.ok ? r.text() : null; })
        .then(function (html) { if (html !== null) body.innerHTML = html; })
        .catch(function () {});
    }
    var timer = null;
    if (window.InboxLive) {
      window.InboxLive.subscribe(function () { clearTimeout(timer); timer = setTimeout(load, 200); });
    }
    setInterval(load, every);
  }

  var table = document.getElementById("inbox-list");
  if (table) refreshList(table);
})();
