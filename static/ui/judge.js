/* The judging page by keyboard (the keys come from the page's "judging-keys" JSON; the
   form posts without this script too).
   Topic mode: a grade key records the judgment and shows the next document (one key per
   judgment); a click or tap on a grade does the same.
   Intent mode: a grade key grades the highlighted intent and moves to the next; the arrow
   keys (and j/k, when no grade uses them) move between intents; n/Enter records.
   Both: b goes back to the previous judgment, x opens "cannot judge"; time on page goes
   with the form; one submit per page. */
(function () {
  var keys = JSON.parse(document.getElementById("judging-keys").textContent);
  var form = document.getElementById("judgment");
  var topicMode = (document.getElementById("judge") || {}).dataset.mode === "topic";
  var shown = performance.now();
  var sent = false;
  var rows = Array.prototype.slice.call(document.querySelectorAll(".grade-row"));
  var gradeKeys = {};
  document.querySelectorAll(".grade-row input[type=radio]").forEach(function (i) {
    gradeKeys[i.dataset.key] = true;
  });
  var down = ["ArrowDown"].concat(gradeKeys.j ? [] : ["j"]);
  var up = ["ArrowUp"].concat(gradeKeys.k ? [] : ["k"]);
  var active = rows.findIndex(function (r) { return !r.querySelector("input:checked"); });
  if (active < 0) active = 0;
  function mark() { rows.forEach(function (r, i) { r.classList.toggle("active", i === active); }); }
  mark();
  function record() { document.getElementById("submit").click(); }
  rows.forEach(function (r, i) {
    r.addEventListener("click", function () { active = i; mark(); });
  });
  if (topicMode) {
    // a click or tap on a grade records it (a label's click reaches its input too)
    document.querySelectorAll(".grade-row input[type=radio]").forEach(function (input) {
      input.addEventListener("click", function () { if (input.checked) record(); });
    });
  }
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
      if (missing >= 0) { active = missing; mark(); rows[active].scrollIntoView({block: "nearest"}); return; }
      record();
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
    if (rows.length > 1 && (down.indexOf(e.key) >= 0 || up.indexOf(e.key) >= 0)) {
      e.preventDefault();
      active = Math.max(0, Math.min(rows.length - 1, active + (down.indexOf(e.key) >= 0 ? 1 : -1)));
      mark();
      rows[active].scrollIntoView({block: "nearest"});
      return;
    }
    var row = rows[active];
    if (!row) return;
    var input = Array.prototype.find.call(row.querySelectorAll("input[type=radio]"),
                                          function (i) { return i.dataset.key === e.key; });
    if (input) {
      e.preventDefault();
      input.checked = true;
      if (topicMode) { record(); return; }
      if (active < rows.length - 1) active += 1;
      mark();
      rows[active].scrollIntoView({block: "nearest"});
    }
  });
})();
