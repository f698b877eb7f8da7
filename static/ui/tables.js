/* Progressive enhancement for tables: numeric cells right-aligned, headers sortable.
   Without JavaScript the tables read exactly as the server wrote them. */
(function () {
  "use strict";
  var NUMBER = /^[\s]*[-+\u2212]?(\d{1,3}(,\d{3})+|\d+)?(\.\d+)?([eE][-+]?\d+)?\s*%?\s*$/;

  function cellValue(cell) {
    var raw = cell.getAttribute("data-sort");
    if (raw === null) raw = cell.textContent;
    raw = raw.trim();
    if (raw !== "" && NUMBER.test(raw) && /\d/.test(raw)) {
      return { num: true, value: parseFloat(raw.replace(/,/g, "").replace("\u2212", "-")) };
    }
    return { num: false, value: raw.toLowerCase() };
  }

  function headerRow(table) {
    if (table.tHead && table.tHead.rows.length) return table.tHead.rows[table.tHead.rows.length - 1];
    var first = table.rows[0];
    if (first && first.cells.length && Array.prototype.every.call(first.cells, function (c) { return c.tagName === "TH"; })) {
      return first;
    }
    return null;
  }

  function bodyRows(table, header) {
    var rows = [];
    Array.prototype.forEach.call(table.tBodies, function (tb) {
      Array.prototype.forEach.call(tb.rows, function (r) { if (r !== header) rows.push(r); });
    });
    return rows;
  }

  var collator = new Intl.Collator(undefined, { numeric: true, sensitivity: "base" });

  function enhance(table) {
    if (table.classList.contains("no-enhance")) return;
    var header = headerRow(table);
    var rows = bodyRows(table, header);
    // A column is numeric when every non-empty cell in it is a number.
    var numeric = {};
    rows.forEach(function (r) {
      if (r.cells.length === 1 && r.cells[0].colSpan > 1) return;
      Array.prototype.forEach.call(r.cells, function (c, i) {
        var t = c.textContent.trim();
        if (t === "" || t === "\u2013" || t === "-") return;
        var v = cellValue(c);
        numeric[i] = (numeric[i] === undefined ? true : numeric[i]) && v.num;
      });
    });
    rows.forEach(function (r) {
      Array.prototype.forEach.call(r.cells, function (c, i) { if (numeric[i]) c.classList.add("num"); });
    });
    if (!table.parentElement.classList.contains("table-wrap")) {
      var wrap = document.createElement("div");
      wrap.className = "table-wrap";
      table.parentNode.insertBefore(wrap, table);
      wrap.appendChild(table);
    }
    if (!header || !rows.length || table.classList.contains("no-sort")) return;
    Array.prototype.forEach.call(header.cells, function (th, i) {
      if (th.colSpan > 1) return;
      if (numeric[i]) th.classList.add("num");
      th.setAttribute("aria-sort", "none");
      var button = document.createElement("button");
      button.type = "button";
      button.className = "sort";
      while (th.firstChild) button.appendChild(th.firstChild);
      th.appendChild(button);
      button.addEventListener("click", function () { sortBy(table, header, i, th); });
    });
  }

  function sortBy(table, header, index, th) {
    var ascending = th.getAttribute("aria-sort") !== "ascending";
    Array.prototype.forEach.call(header.cells, function (c) { if (c.hasAttribute("aria-sort")) c.setAttribute("aria-sort", "none"); });
    th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    var rows = bodyRows(table, header).filter(function (r) { return r.cells.length > index; });
    var keyed = rows.map(function (r, pos) { return { row: r, key: cellValue(r.cells[index]), pos: pos }; });
    keyed.sort(function (a, b) {
      var d;
      if (a.key.num && b.key.num) d = a.key.value - b.key.value;
      else if (a.key.num !== b.key.num) d = a.key.num ? -1 : 1;
      else d = collator.compare(a.key.value, b.key.value);
      if (!ascending) d = -d;
      return d || a.pos - b.pos;
    });
    var parent = rows.length ? rows[0].parentNode : null;
    keyed.forEach(function (k) { parent.appendChild(k.row); });
  }

  function copyButtons() {
    Array.prototype.forEach.call(document.querySelectorAll("[data-copy]"), function (button) {
      button.hidden = false;
      button.addEventListener("click", function () {
        var target = document.getElementById(button.getAttribute("data-copy"));
        if (!target) return;
        target.select();
        var done = function () { button.textContent = "Copied"; };
        if (navigator.clipboard) navigator.clipboard.writeText(target.value).then(done, function () { document.execCommand("copy"); done(); });
        else { document.execCommand("copy"); done(); }
      });
    });
  }

  function ready() {
    Array.prototype.forEach.call(document.querySelectorAll("main table"), enhance);
    copyButtons();
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", ready);
  else ready();
})();
