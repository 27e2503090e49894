// Proof cards keep long pages quick to load (README, "Pages stay light"):
// - a folded source is not in the page: when the reader opens it, its highlighted version is
//   fetched, once, and built into a code block as Material builds one, with a copy button that
//   Material's own clipboard handler serves;
// - an unfolded source arrives as plain text and is highlighted once the page has loaded;
// - a figure fits the column and links to its file; a click or tap (Enter or Space when it has
//   focus) opens it full size in a dialog over the page, in the reader's palette; Escape, a click
//   or the close button closes it, and focus goes back to the figure.
// All of it works on every page that Material's instant navigation brings in.

function proofCardFetch(holder, attribute, place) {
  const url = holder.getAttribute(attribute);
  holder.removeAttribute(attribute);
  fetch(url)
    .then((response) => (response.ok ? response.text() : Promise.reject(response.status)))
    .then(place)
    .catch(() => holder.setAttribute(attribute, url)); // the plain text stays; try again later
}

document.addEventListener("toggle", (event) => {
  const details = event.target;
  if (!(details instanceof HTMLDetailsElement) || !details.open) return;
  const holder = details.querySelector("div[data-proof-source]");
  if (!holder) return;
  proofCardFetch(holder, "data-proof-source", (html) => {
    const pre = document.createElement("pre");
    pre.id = `__code_${holder.id}`;
    pre.innerHTML = '<nav class="md-code__nav"><button class="md-code__button" title="Copy to clipboard" ' +
      `data-clipboard-target="#${pre.id} > code" data-md-type="copy"></button></nav><code tabindex="0"></code>`;
    pre.querySelector("code").innerHTML = html;
    holder.replaceChildren(pre);
  });
}, true);

function proofCardHighlight() {
  for (const holder of document.querySelectorAll("div[data-proof-highlight]")) {
    const code = holder.querySelector("code");
    proofCardFetch(holder, "data-proof-highlight", (html) => { code.innerHTML = html; });
  }
}

if (typeof document$ !== "undefined") {
  document$.subscribe(() => setTimeout(proofCardHighlight, 0)); // Material: each page, instant or not
} else {
  addEventListener("load", proofCardHighlight);
}

function proofFigureDialog() {
  let dialog = document.querySelector("dialog.proof-figure-dialog");
  if (dialog) return dialog;
  dialog = document.createElement("dialog");
  dialog.className = "proof-figure-dialog";
  dialog.innerHTML = '<div class="proof-figure-dialog__bar"><button type="button" class="proof-figure-dialog__close">' +
    'Close</button></div><div class="proof-figure-dialog__view"></div>';
  dialog.addEventListener("click", () => dialog.close()); // the button, the figure or around it
  dialog.addEventListener("close", () => {
    dialog.querySelector(".proof-figure-dialog__view").replaceChildren();
    if (dialog.opener && dialog.opener.isConnected) dialog.opener.focus();
  });
  document.body.append(dialog);
  return dialog;
}

function proofFigureOpen(link) {
  const dialog = proofFigureDialog();
  const images = [...link.querySelectorAll("img")].map((image) => {
    const copy = image.cloneNode();
    copy.removeAttribute("class");
    copy.loading = "eager";
    const width = Number(image.getAttribute("width")), height = Number(image.getAttribute("height"));
    copy.style.setProperty("--proof-figure-width", `${width}px`); // its own size, or larger
    copy.style.setProperty("--proof-figure-ratio", `${width / height}`);
    return copy;
  });
  dialog.querySelector(".proof-figure-dialog__view").replaceChildren(...images);
  dialog.setAttribute("aria-label", images[0] ? images[0].alt : "Figure");
  dialog.opener = link;
  dialog.showModal();
}

function proofFigureLink(event) {
  return event.target instanceof Element ? event.target.closest("a.proof-card__zoom") : null;
}

document.addEventListener("click", (event) => {
  const link = proofFigureLink(event);
  if (!link || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
  event.preventDefault(); // a plain click: the dialog, not the file (a modified one opens the file)
  proofFigureOpen(link);
}, true);

document.addEventListener("keydown", (event) => {
  const link = event.key === " " && proofFigureLink(event); // Enter clicks a link by itself
  if (!link) return;
  event.preventDefault();
  proofFigureOpen(link);
});
