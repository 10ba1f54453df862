// Copy buttons: <button data-copy="ID" data-done="TEXT" hidden> copies the
// text of element ID and says TEXT in the element ID-status. Without
// script the button stays hidden and one click selects the text (style.css).
"use strict";
document.querySelectorAll("button[data-copy]").forEach(function (button) {
  var source = document.getElementById(button.dataset.copy);
  var status = document.getElementById(button.dataset.copy + "-status");
  if (!source || !navigator.clipboard) {
    return;
  }
  button.hidden = false;
  button.addEventListener("click", function () {
    navigator.clipboard.writeText(source.textContent.trim()).then(function () {
      if (status) {
        status.textContent = button.dataset.done;
      }
    });
  });
});
