// The playground page: htmx leaves 4xx answers unswapped by default; the playground's
// refusals (400: a question too long; 429: too many questions) are fragments saying why,
// shown where the answer would have been.
(function () {
  "use strict";
  document.addEventListener("htmx:beforeSwap", function (event) {
    const status = event.detail.xhr.status;
    if ((status === 400 || status === 429) && event.detail.target.id === "playground-results") {
      event.detail.shouldSwap = true;
      event.detail.isError = false;
    }
  });
})();
