/* Statistics page: draws the three charts from the JSON the server rendered (#stats-charts)
   with the vendored Chart.js (static/ai_agents/vendor/chartjs). The figures themselves are in
   the page's text; the charts only show them. */
(function () {
  "use strict";
  var source = document.getElementById("stats-charts");
  if (!source || typeof window.Chart === "undefined") { return; }
  var data = JSON.parse(source.textContent);
  var t = data.texts;
  var common = { responsive: true, maintainAspectRatio: false, animation: false };
  var integers = { beginAtZero: true, ticks: { precision: 0 } };

  function draw(id, config) {
    var canvas = document.getElementById(id);
    if (!canvas) { return; }
    var chart = new window.Chart(canvas, config);
    canvas.dataset.drawn = String(chart.data.datasets.length);
  }

  draw("chart-days", {
    type: "line",
    data: {
      labels: data.days,
      datasets: [
        { label: t.conversations, data: data.conversations, borderColor: "#1a5fb4", backgroundColor: "#1a5fb4" },
        { label: t.resolved, data: data.resolved, borderColor: "#26a269", backgroundColor: "#26a269" },
        { label: t.escalated, data: data.escalated, borderColor: "#c01c28", backgroundColor: "#c01c28" }
      ]
    },
    options: Object.assign({ scales: { y: integers } }, common)
  });
  draw("chart-reasons", {
    type: "bar",
    data: {
      labels: data.reasons,
      datasets: [{ label: t.escalated, data: data.reason_counts, backgroundColor: "#c01c28" }]
    },
    options: Object.assign({ indexAxis: "y", scales: { x: integers }, plugins: { legend: { display: false } } }, common)
  });
  draw("chart-first", {
    type: "bar",
    data: {
      labels: data.who,
      datasets: [
        { label: t.p50, data: data.p50, backgroundColor: "#1a5fb4" },
        { label: t.p90, data: data.p90, backgroundColor: "#99c1f1" }
      ]
    },
    options: Object.assign({ scales: { y: { beginAtZero: true } } }, common)
  });
})();
