// The "changed only" filter and navigation for the comparison. The page is
// complete without this script.
(function () {
  "use strict";
  var box = document.getElementById("changed-only");
  var rows = Array.prototype.slice.call(document.querySelectorAll("#cmp-cases tbody tr"));
  function apply() {
    rows.forEach(function (r) {
      r.classList.toggle("hidden", box.checked && r.getAttribute("data-changed") !== "true");
    });
  }
  if (box) { box.addEventListener("change", apply); apply(); }
  // A change lives in a folded section: open it before jumping there.
  function reveal(id) {
    var el = document.getElementById(id);
    if (!el) { return false; }
    for (var p = el; p; p = p.parentElement) {
      if (p.tagName === "DETAILS") { p.open = true; }
    }
    el.classList.add("flash");
    el.scrollIntoView({ block: "start" });
    return true;
  }
  document.addEventListener("click", function (ev) {
    var a = ev.target.closest ? ev.target.closest("a[href^='#']") : null;
    if (a && reveal(a.getAttribute("href").slice(1))) {
      ev.preventDefault();
      history.replaceState(null, "", a.getAttribute("href"));
    }
  });
  if (location.hash) { reveal(location.hash.slice(1)); }
})();
