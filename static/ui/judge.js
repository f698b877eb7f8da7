/* The judging page: keys grade the highlighted row and move on, n/Enter submits, b goes
   back, x opens "cannot judge"; time on page goes with the form; one submit per page.
   The keys come from the page's "judging-keys" JSON. */
(function () {
  var keys = JSON.parse(document.getElementById("judging-keys").textContent);
  var form = document.getElementById("judgment");
  var shown = performance.now();
  var sent = false;
  var rows = Array.prototype.slice.call(document.querySelectorAll(".grade-row"));
  var active = rows.findIndex(function (r) { return !r.querySelector("input:checked"); });
  if (active < 0) active = 0;
  function mark() { rows.forEach(function (r, i) { r.classList.toggle("active", i === active); }); }
  mark();
  rows.forEach(function (r, i) { r.addEventListener("click", function () { active = i; mark(); }); });
  form.addEventListener("submit", function (e) {
    if (sent) { e.preventDefault(); return; }
    sent = true;
    document.getElementById("id_js_seconds").value = ((performance.now() - shown) / 1000).toFixed(2);
  });
  var reason = document.getElementById("cannot-judge-reason");
  reason.addEventListener("keydown", function (e) {
    if (e.key === "Enter") { e.preventDefault(); document.getElementById("cannot-submit").click(); }
  });
  document.addEventListener("keydown", function (e) {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    var t = e.target;
    if (t.tagName === "TEXTAREA" || (t.tagName === "INPUT" && t.type === "text")) {
      if (e.key === "Escape") t.blur();
      return;
    }
    if (keys.next.indexOf(e.key) >= 0) {
      e.preventDefault();
      var missing = rows.findIndex(function (r) { return !r.querySelector("input:checked"); });
      if (missing >= 0) { active = missing; mark(); return; }
      document.getElementById("submit").click();
      return;
    }
    var back = document.getElementById("back");
    if (keys.back && e.key === keys.back && back) { e.preventDefault(); window.location.href = back.href; return; }
    if (keys.cannot && e.key === keys.cannot) {
      e.preventDefault();
      document.getElementById("cannot").open = true;
      reason.focus();
      return;
    }
    var row = rows[active];
    if (!row) return;
    var input = Array.prototype.find.call(row.querySelectorAll("input[type=radio]"),
                                          function (i) { return i.dataset.key === e.key; });
    if (input) {
      e.preventDefault();
      input.checked = true;
      if (active < rows.length - 1) active += 1;
      mark();
    }
  });
})();
