/* The crowd answer form: one submit per page (a double click must not post twice; the
   server is idempotent too). A page restored by the back button starts unlocked. */
(function () {
  "use strict";
  var answerForm = document.getElementById("answer-form");
  if (!answerForm) return;
  answerForm.addEventListener("submit", function (e) {
    if (this.dataset.sent) { e.preventDefault(); return; }
    this.dataset.sent = "1";
  });
  window.addEventListener("pageshow", function () { delete answerForm.dataset.sent; });
})();
