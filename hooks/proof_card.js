// Proof cards keep long pages quick to load (README, "Pages stay light"):
// - a folded source is not in the page: when the reader opens it, its highlighted version is
//   fetched, once, and built into a code block as Material builds one, with a copy button that
//   Material's own clipboard handler serves;
// - an unfolded source arrives as plain text and is highlighted once the page has loaded.
// Both work on every page that Material's instant navigation brings in.

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
