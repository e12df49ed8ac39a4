// The run page's reward preview: htmx leaves 4xx answers unswapped by default; a preview
// refused because the account has asked for too many (429) is a fragment saying why and when
// to try again, shown where the scores would have been.
(function () {
  "use strict";
  document.addEventListener("htmx:beforeSwap", function (event) {
    if (event.detail.xhr.status === 429 && event.detail.target.id === "reward-preview") {
      event.detail.shouldSwap = true;
      event.detail.isError = false;
    }
  });
})();
