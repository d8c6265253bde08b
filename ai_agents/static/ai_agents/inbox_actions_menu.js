// The conversation's "Más" button on a phone: a disclosure that shows the secondary actions
// (Asignar, Detalles, Devolver al bot, Avisos) under the actions row, so the row fits a 390 px
// screen with the primary action and Cerrar in view (as Chatwoot's and Intercom's phone
// layouts do). On wider screens the button is hidden and the actions stand in the row.
// An action chosen, Esc or a tap elsewhere closes it.
(function () {
  "use strict";
  var toggle = document.getElementById("inbox-actions-toggle");
  var menu = document.getElementById("inbox-actions-menu");
  if (!toggle || !menu) return;

  function setOpen(open) {
    menu.dataset.open = open ? "true" : "false";
    toggle.setAttribute("aria-expanded", open ? "true" : "false");
  }
  function isOpen() { return menu.dataset.open === "true"; }

  toggle.addEventListener("click", function () {
    setOpen(!isOpen());
    if (isOpen()) {
      var first = menu.querySelector("button:not([disabled])");
      if (first) first.focus();
    }
  });
  menu.addEventListener("click", function (event) {
    if (event.target.closest("button")) setOpen(false);
  });
  document.addEventListener("click", function (event) {
    if (isOpen() && !menu.contains(event.target) && !toggle.contains(event.target)) setOpen(false);
  });
  // Esc in the menu (or on "Más") closes the menu only, not a panel opened from it earlier as
  // well: heard first (the capture phase) and marked handled, which the conversation's own
  // Esc respects. Esc elsewhere (the reply box's canned list) is left to whoever has focus.
  function inMenu(target) {
    return target === toggle || menu.contains(target) || target === document.body;
  }
  document.addEventListener("keydown", function (event) {
    if (event.key === "Escape" && isOpen() && !event.defaultPrevented && inMenu(event.target)
        && toggle.getClientRects().length > 0) {
      event.preventDefault();
      setOpen(false);
      toggle.focus();
    }
  }, true);
  setOpen(false);
})();
