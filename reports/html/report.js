// Filters and bulk expand/collapse for the cell list. Everything works
// without this script; it only saves clicks.
(function () {
  "use strict";
  var cells = Array.prototype.slice.call(document.querySelectorAll("details.cell"));
  function show(filter) {
    cells.forEach(function (c) {
      var s = c.getAttribute("data-status");
      var visible = filter === "all" || (filter === "failing" ? s !== "pass" : s === filter);
      c.classList.toggle("hidden", !visible);
    });
    document.querySelectorAll("[data-filter]").forEach(function (b) {
      b.setAttribute("aria-pressed", String(b.getAttribute("data-filter") === filter));
    });
  }
  document.querySelectorAll("[data-filter]").forEach(function (b) {
    b.addEventListener("click", function () { show(b.getAttribute("data-filter")); });
  });
  document.querySelectorAll("[data-expand]").forEach(function (b) {
    b.addEventListener("click", function () {
      var open = b.getAttribute("data-expand") === "open";
      cells.forEach(function (c) { if (!c.classList.contains("hidden")) { c.open = open; } });
    });
  });
  if (location.hash) {
    var target = document.getElementById(location.hash.slice(1));
    if (target && target.tagName === "DETAILS") { target.open = true; }
  }
})();
