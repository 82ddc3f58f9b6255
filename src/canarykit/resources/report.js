// canarykit study report: sortable tables and the interactive figures (inlined into the page).
(function () {
  "use strict";
  document.documentElement.classList.add("js");

  function sortKey(cell) {
    var k = cell.getAttribute("data-sort");
    return k === null ? cell.textContent.trim() : k;
  }

  function sortBy(table, th, index) {
    var ascending = th.getAttribute("aria-sort") !== "ascending";
    var numeric = th.classList.contains("num");
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (other) {
      other.setAttribute("aria-sort", "none");
    });
    th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    var body = table.tBodies[0];
    var rows = Array.prototype.map.call(body.rows, function (row, i) {
      return { row: row, key: sortKey(row.cells[index]), i: i };
    });
    rows.sort(function (a, b) {
      // empty (n/a) cells last in either direction; ties keep their order
      if (a.key === "" || b.key === "") { return (a.key === "") - (b.key === "") || a.i - b.i; }
      var c = numeric ? Number(a.key) - Number(b.key)
                      : a.key.localeCompare(b.key, undefined, { numeric: true, sensitivity: "base" });
      return (ascending ? c : -c) || a.i - b.i;
    });
    rows.forEach(function (r) { body.appendChild(r.row); });
  }

  document.querySelectorAll("table.sortable").forEach(function (table) {
    if (!table.tHead || !table.tBodies.length) { return; }
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, index) {
      var button = th.querySelector("button");
      if (button) { button.addEventListener("click", function () { sortBy(table, th, index); }); }
    });
  });

  // Figures: vega-embed draws each spec over its PNG; the PNG stays if anything fails.
  if (typeof window.vegaEmbed !== "function") { return; }
  document.querySelectorAll("figure.vega-figure").forEach(function (figure) {
    var source = document.getElementById(figure.getAttribute("data-spec"));
    var target = figure.querySelector(".vega-target");
    if (!source || !target) { return; }
    var spec;
    try { spec = JSON.parse(source.textContent); } catch (e) { figure.classList.add("failed"); return; }
    window.vegaEmbed(target, spec, {
      renderer: "svg",
      actions: { export: true, source: false, compiled: false, editor: false }
    }).then(function () {
      figure.classList.add("rendered");
    }).catch(function (err) {
      figure.classList.add("failed");
      target.textContent = "";
      if (window.console) { console.error("figure " + figure.id + ": " + err); }
    });
  });
})();
