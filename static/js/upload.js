// The project page's documents: every chosen or dropped file goes in its own request, so each
// one shows its own progress bar and its own result (without JavaScript the form posts all files
// at once); the document table's live refresh leaves an open entity form alone.
(function () {
  "use strict";

  function csrfToken(form) {
    return form.querySelector("input[name=csrfmiddlewaretoken]").value;
  }

  function row(list, file) {
    const item = document.createElement("li");
    item.className = "upload-item";
    item.innerHTML = '<span class="upload-name"></span><progress max="100" value="0"></progress>' +
      '<span class="upload-state">waiting</span>';
    item.querySelector(".upload-name").textContent = file.name;
    list.appendChild(item);
    return item;
  }

  function finish(item, ok, text) {
    item.classList.add(ok ? "done" : "failed");
    item.querySelector("progress").value = ok ? 100 : 0;
    item.querySelector(".upload-state").textContent = text;
  }

  function send(form, file, item) {
    return new Promise(function (resolve) {
      const body = new FormData();
      body.append("files", file);
      const xhr = new XMLHttpRequest();
      xhr.open("POST", form.action);
      xhr.setRequestHeader("X-CSRFToken", csrfToken(form));
      xhr.setRequestHeader("Accept", "application/json");
      xhr.upload.onprogress = function (event) {
        if (event.lengthComputable) {
          const percent = Math.round((100 * event.loaded) / event.total);
          item.querySelector("progress").value = percent;
          item.querySelector(".upload-state").textContent = "uploading " + percent + "%";
        }
      };
      xhr.onload = function () {
        let result = null;
        try { result = JSON.parse(xhr.responseText).files[0]; } catch (e) { /* not JSON */ }
        if (result && result.ok) finish(item, true, "uploaded");
        else if (result) finish(item, false, result.error);
        else if (xhr.status === 413) finish(item, false, "This file is too large to upload.");
        else finish(item, false, "The upload failed (HTTP " + xhr.status + "). Try again.");
        resolve();
      };
      xhr.onerror = function () {
        finish(item, false, "The connection dropped during the upload. Try again.");
        resolve();
      };
      xhr.send(body);
    });
  }

  async function uploadAll(form, files) {
    const list = document.getElementById("upload-list");
    const maxBytes = Number(form.dataset.maxBytes);
    const queued = Array.from(files).map(function (file) { return [file, row(list, file)]; });
    for (const [file, item] of queued) {
      if (maxBytes && file.size > maxBytes) {
        finish(item, false, file.name + " is larger than the per-file limit.");
        continue;
      }
      await send(form, file, item);
      document.body.dispatchEvent(new CustomEvent("documents-changed"));
    }
  }

  // While an entity is being edited, the document table's poll would replace the open form:
  // skip that refresh (the next one after saving catches up). A listener, not an hx-trigger
  // filter, because filters are evaluated strings, which the Content-Security-Policy forbids.
  document.addEventListener("htmx:confirm", function (event) {
    const table = event.detail.target;
    if (table.id === "documents" && table.querySelector("form.entity-form")) event.preventDefault();
  });

  document.addEventListener("DOMContentLoaded", function () {
    const form = document.querySelector("[data-upload-zone]");
    if (!form) return;
    const input = form.querySelector("input[type=file]");
    function uploadChosen() {
      const files = Array.from(input.files);
      input.value = "";
      if (files.length) uploadAll(form, files);
    }
    input.addEventListener("change", uploadChosen);
    // Files chosen while this deferred script was still loading fired their change event
    // before the listener existed: upload them now rather than leave them waiting unseen.
    uploadChosen();
    ["dragenter", "dragover"].forEach(function (name) {
      form.addEventListener(name, function (event) {
        event.preventDefault();
        form.classList.add("dragging");
      });
    });
    ["dragleave", "drop"].forEach(function (name) {
      form.addEventListener(name, function () { form.classList.remove("dragging"); });
    });
    form.addEventListener("drop", function (event) {
      event.preventDefault();
      uploadAll(form, event.dataTransfer.files);
    });
  });
})();
