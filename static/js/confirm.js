// Forms that ask before they submit: <form data-confirm="Cancel this run?">. A static file,
// not an inline onsubmit, which the pages' Content-Security-Policy does not run.
document.addEventListener("submit", (event) => {
  const question = event.target.dataset && event.target.dataset.confirm;
  if (question && !window.confirm(question)) {
    event.preventDefault();
  }
});
