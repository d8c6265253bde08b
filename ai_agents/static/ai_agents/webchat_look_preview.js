/* Admin, web chat binding: the appearance preview follows the look_* fields as they are edited
 * (texts through textContent; the text colour on the chosen colour by the same WCAG rule as
 * ai_agents/channels/webchat/appearance.py: black or white, whichever contrasts more). */
(function () {
  "use strict";
  function ready(fn) { if (document.readyState !== "loading") fn(); else document.addEventListener("DOMContentLoaded", fn); }
  function luminance(hex) {
    var sum = 0, weights = [0.2126, 0.7152, 0.0722];
    for (var i = 0; i < 3; i++) {
      var c = parseInt(hex.slice(1 + 2 * i, 3 + 2 * i), 16) / 255;
      sum += weights[i] * (c <= 0.04045 ? c / 12.92 : Math.pow((c + 0.055) / 1.055, 2.4));
    }
    return sum;
  }
  function textColor(hex) {
    var l = luminance(hex);
    return (1.05 / (l + 0.05)) >= ((l + 0.05) / 0.05) ? "#ffffff" : "#000000";
  }
  ready(function () {
    var box = document.querySelector("[data-look-preview]");
    if (!box) return;
    var q = function (sel) { return box.querySelector(sel); };
    var field = function (name) { return document.getElementById("id_look_" + name); };
    function update() {
      var color = (field("color") || {}).value || "";
      if (/^#[0-9a-f]{6}$/i.test(color)) {
        var on = textColor(color);
        [q("[data-look-head]"), q("[data-look-launcher]")].forEach(function (node) {
          node.style.background = color; node.style.color = on;
        });
      }
      q("[data-look-title]").textContent = (field("title") || {}).value || box.getAttribute("data-title");
      q("[data-look-greeting]").textContent = (field("greeting") || {}).value || box.getAttribute("data-greeting");
      q("[data-look-launcher]").textContent = (field("launcher_text") || {}).value || box.getAttribute("data-open");
      var left = ((field("position") || {}).value || "") === "bottom-left";
      q("[data-look-row]").style.justifyContent = left ? "flex-start" : "flex-end";
      var url = ((field("avatar_url") || {}).value || "").trim(), img = q("[data-look-avatar]");
      if (/^https:\/\/\S+$/.test(url)) { if (img.getAttribute("src") !== url) img.src = url; img.hidden = false; }
      else img.hidden = true;
    }
    ["color", "title", "greeting", "launcher_text", "position", "avatar_url"].forEach(function (name) {
      var input = field(name);
      if (input) { input.addEventListener("input", update); input.addEventListener("change", update); }
    });
  });
})();
