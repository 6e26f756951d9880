// Filters, sorting and navigation for the run report. The page is complete
// without this script (every cell is listed and opens on a click); it only
// narrows and orders what is shown and saves clicks.
(function () {
  "use strict";
  var $ = function (s, el) { return (el || document).querySelector(s); };
  var $$ = function (s, el) { return Array.prototype.slice.call((el || document).querySelectorAll(s)); };
  var list = $("#cell-list");
  var cells = $$("details.cell");
  var rows = $$("#case-matrix tbody tr");
  var state = { status: "all", model: "", profile: "", tag: "", q: "", sort: "" };

  function statusMatches(s) {
    if (state.status === "all") { return true; }
    if (state.status === "failing") { return s !== "pass" && s !== ""; }
    return s === state.status;
  }
  function groupMatches(el) {
    return (!state.model || el.getAttribute("data-model") === state.model) &&
      (!state.profile || el.getAttribute("data-profile") === state.profile);
  }
  function tagMatches(el) {
    return !state.tag || (" " + el.getAttribute("data-tags") + " ").indexOf(" " + state.tag + " ") >= 0;
  }
  function cellMatches(c) {
    var q = state.q;
    return statusMatches(c.getAttribute("data-status")) && groupMatches(c) && tagMatches(c) &&
      (!q || c.getAttribute("data-search").indexOf(q) >= 0);
  }

  function num(el, attr) { var v = parseFloat(el.getAttribute(attr)); return isNaN(v) ? 0 : v; }
  function order(els, parent) {
    var keyed = els.map(function (el, i) { return { el: el, i: i }; });
    if (state.sort) {
      var attr = "data-" + state.sort, asc = state.sort === "score";
      keyed.sort(function (a, b) {
        var d = asc ? num(a.el, attr) - num(b.el, attr) : num(b.el, attr) - num(a.el, attr);
        return d || a.i - b.i;
      });
    }
    keyed.forEach(function (k) { parent.appendChild(k.el); });
  }

  function apply() {
    var shown = 0;
    var byCase = {};
    cells.forEach(function (c) {
      var ok = cellMatches(c);
      c.classList.toggle("hidden", !ok);
      c.classList.remove("forced");
      if (ok) {
        shown++;
        byCase[c.getAttribute("data-case")] = true;
      }
    });
    // Matrix: columns follow the model and profile filters; a case row
    // stays when one of its shown cells has the status asked for.
    $$("#case-matrix [data-model]").forEach(function (el) { el.classList.toggle("hidden", !groupMatches(el)); });
    $$("#case-matrix th[data-head]").forEach(function (th) {
      var m = th.getAttribute("data-head");
      var n = $$("#case-matrix thead th[data-model]").filter(function (p) {
        return p.getAttribute("data-model") === m && groupMatches(p);
      }).length;
      th.classList.toggle("hidden", n === 0);
      if (n > 0) { th.colSpan = n; }
    });
    rows.forEach(function (tr) {
      var kase = tr.getAttribute("data-case");
      var any = false;
      $$("td.mc", tr).forEach(function (td) {
        if (!groupMatches(td)) { return; }
        $$(".pip", td).forEach(function (p) {
          var on = statusMatches(p.getAttribute("data-status"));
          p.classList.toggle("dim", !on);
          any = any || on;
        });
      });
      var q = state.q;
      var textOk = !q || kase.toLowerCase().indexOf(q) >= 0 || !!byCase[kase];
      tr.classList.toggle("hidden", !(any && tagMatches(tr) && textOk));
    });
    $$(".tile").forEach(function (t) {
      t.setAttribute("aria-pressed", String(state.model === t.getAttribute("data-model") && state.profile === t.getAttribute("data-profile")));
    });
    $$("svg.chart [data-model]").forEach(function (g) {
      var m = g.getAttribute("data-model");
      g.classList.toggle("dim", m !== "" && !groupMatches(g));
    });
    $$("[data-filter]").forEach(function (b) {
      b.setAttribute("aria-pressed", String(b.getAttribute("data-filter") === state.status));
    });
    order(cells, list);
    order(rows, $("#case-matrix tbody"));
    var count = $("#f-count");
    if (count) { count.textContent = shown + " of " + cells.length + " cells"; }
    $("#none-shown").classList.toggle("hidden", shown > 0 || cells.length === 0);
  }

  $$("[data-filter]").forEach(function (b) {
    b.addEventListener("click", function () { state.status = b.getAttribute("data-filter"); apply(); });
  });
  [["#f-model", "model"], ["#f-profile", "profile"], ["#f-tag", "tag"], ["#f-sort", "sort"]].forEach(function (p) {
    var el = $(p[0]);
    if (el) { el.addEventListener("change", function () { state[p[1]] = el.value; apply(); }); }
  });
  var q = $("#f-q");
  if (q) { q.addEventListener("input", function () { state.q = q.value.trim().toLowerCase(); apply(); }); }
  $$(".tile").forEach(function (t) {
    t.addEventListener("click", function () {
      var same = state.model === t.getAttribute("data-model") && state.profile === t.getAttribute("data-profile");
      state.model = same ? "" : t.getAttribute("data-model");
      state.profile = same ? "" : t.getAttribute("data-profile");
      $("#f-model").value = state.model;
      $("#f-profile").value = state.profile;
      apply();
      $("#cases").scrollIntoView();
    });
  });
  $$("[data-expand]").forEach(function (b) {
    b.addEventListener("click", function () {
      var open = b.getAttribute("data-expand") === "open";
      cells.forEach(function (c) { if (!c.classList.contains("hidden")) { c.open = open; } });
    });
  });

  // What the model was given lives once per agent at the end of the page;
  // a cell shows its copy when opened.
  $$("details.given").forEach(function (d) {
    d.addEventListener("toggle", function () {
      var body = $(".given-body", d);
      if (!d.open || body.getAttribute("data-filled")) { return; }
      var src = document.getElementById(d.getAttribute("data-agent"));
      if (!src) { return; }
      body.textContent = "";
      body.appendChild($(".agent-body", src).cloneNode(true));
      body.setAttribute("data-filled", "1");
    });
  });

  // Opening a cell from the matrix or a link shows it even when the
  // filters hide it, and marks it until the filters change.
  function openCell(id) {
    var target = document.getElementById(id);
    if (!target || target.tagName !== "DETAILS") { return false; }
    if (target.classList.contains("hidden")) {
      target.classList.remove("hidden");
      target.classList.add("forced");
    }
    target.open = true;
    cells.forEach(function (c) { c.classList.remove("flash"); });
    target.classList.add("flash");
    target.scrollIntoView({ block: "start" });
    return true;
  }
  document.addEventListener("click", function (ev) {
    var a = ev.target.closest ? ev.target.closest("a[href^='#']") : null;
    if (!a) { return; }
    var id = a.getAttribute("href").slice(1);
    if (openCell(id)) {
      ev.preventDefault();
      history.replaceState(null, "", "#" + id);
    } else if (document.getElementById(id) && document.getElementById(id).tagName === "DETAILS") {
      document.getElementById(id).open = true;
    }
  });
  apply();
  if (location.hash) { openCell(location.hash.slice(1)); }
})();
