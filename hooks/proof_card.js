// Proof cards keep long pages quick to load (README, "Pages stay light"):
// - a folded source is not in the page: when the reader opens it, its highlighted version is
//   fetched, once, and built into a code block as Material builds one, with a copy button that
//   Material's own clipboard handler serves;
// - an unfolded source arrives as plain text and is highlighted once the page has loaded;
// - a figure fits the column and links to its file; a click or tap (Enter or Space when it has
//   focus) opens it full size in a dialog over the page, in the reader's palette; Escape, a click
//   or the close button closes it, and focus goes back to the figure.
// - a claim's words open its popover on a click, a tap, Enter or Space: what it says, the condition,
//   the values it read, its verdict and any second run, with a link to its proof's card; Escape, a
//   click elsewhere or Tab away closes it, and focus goes back to the claim. A measured value opens
//   one the same way, so that the reader keeps their place: the variable, the proof (and its
//   summary, where its card is on the page), and a link to the card;
// - in a source unfolded in part, each run of folded lines waits behind a button that unfolds it in
//   place (and folds it again); "Show the whole file" unfolds them all;
// - a link to something inside a closed box (a deeper aside, a card's source) opens the box first,
//   so the browser can scroll to it; so does arriving at such an address.
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

// ---- claims and values: a popover each, one element per page --------------------------------------

const PROOF_VERDICTS = {
  held: ["\u2713 Held when this site was built", "held"],
  fact: ["\u2713 Checked, exactly, when this site was built", "held"],
  failed: ["\u2717 Does not hold on the machine that built this page", "failed"],
  unchecked: ["\u25CB Not checked on this machine", "unchecked"],
};

function proofClaimState(claim) {
  if (claim.classList.contains("proof-claim--failed")) return "failed";
  if (claim.classList.contains("proof-claim--unchecked")) return "unchecked";
  return claim.classList.contains("proof-claim--fact") ? "fact" : "held";
}

function proofPopover() {
  let pop = document.getElementById("proof-pop");
  if (pop) return pop;
  pop = document.createElement("div");
  pop.id = "proof-pop";
  pop.className = "proof-pop";
  pop.hidden = true;
  pop.tabIndex = -1;
  pop.setAttribute("role", "dialog");
  pop.setAttribute("aria-labelledby", "proof-pop-words");
  pop.setAttribute("aria-describedby", "proof-pop-verdict");
  pop.addEventListener("focusout", (event) => { // Tab away closes it (back to the claim keeps it open)
    const to = event.relatedTarget;
    if (!pop.hidden && to && !pop.contains(to) && to !== pop.opener) proofPopClose(false);
  });
  return pop;
}

function proofPopRow(list, term, text) {
  if (!text) return;
  const dt = document.createElement("dt"), dd = document.createElement("dd"), code = document.createElement("code");
  dt.textContent = term;
  code.textContent = text;
  dd.append(term === "Note" ? text : code);
  list.append(dt, dd);
}

function proofCardOf(link) {
  // The card a value or claim links to, where it is on this page.
  const href = link.getAttribute("href") || "";
  return href.startsWith("#") ? document.getElementById(href.slice(1)) : null;
}

function proofPopOpen(link) {
  const claim = link.parentElement, pop = proofPopover(), value = claim.classList.contains("proof-value");
  const [said, tone] = value ? [claim.dataset.note && claim.dataset.note.startsWith("the proof failed")
    ? "\u2717 Not measured: its proof failed" : "Measured when this site was built", "value"]
    : PROOF_VERDICTS[proofClaimState(claim)];
  const verdict = document.createElement("p"), words = document.createElement("p"), list = document.createElement("dl");
  verdict.id = "proof-pop-verdict";
  verdict.className = `proof-pop__verdict proof-pop__verdict--${tone}`;
  verdict.textContent = said;
  words.id = "proof-pop-words";
  words.className = "proof-pop__words";
  words.textContent = value ? link.textContent.trim() : `\u201C${link.textContent.trim()}\u201D`;
  const card = proofCardOf(link), summary = card && card.querySelector(".proof-card__summary");
  if (value) {
    proofPopRow(list, "Variable", claim.dataset.name);
  } else {
    proofPopRow(list, "Condition", claim.dataset.condition);
    proofPopRow(list, "Values", claim.dataset.seen);
  }
  proofPopRow(list, "Note", claim.dataset.note);
  const more = document.createElement("p"), to = document.createElement("a");
  to.href = link.getAttribute("href");
  to.textContent = `The proof: ${claim.dataset.proof || "its card"}`;
  more.append(to);
  if (value && summary) more.append(`: ${summary.textContent.trim()}`);
  pop.replaceChildren(verdict, words, list, more);
  if (pop.opener && pop.opener !== link) pop.opener.setAttribute("aria-expanded", "false");
  pop.opener = link;
  link.setAttribute("aria-expanded", "true");
  claim.after(pop); // right after the claim, so that Tab goes on from there in the text's order
  pop.hidden = false;
  proofPopPlace(pop, link.getBoundingClientRect());
  pop.focus({ preventScroll: true });
}

function proofPopPlace(pop, box) {
  // Under the claim (over it where there is no room below), inside the screen's width; as an
  // absolutely placed box, its coordinates are its containing block's.
  const parent = pop.offsetParent || document.body, origin = parent.getBoundingClientRect();
  const width = pop.offsetWidth, height = pop.offsetHeight, room = document.documentElement.clientWidth;
  const left = Math.max(8, Math.min(box.left, room - width - 8));
  const top = box.bottom + 6 + height < innerHeight || box.top < height + 6 ? box.bottom + 6 : box.top - 6 - height;
  pop.style.left = `${left - origin.left - parent.clientLeft + parent.scrollLeft}px`;
  pop.style.top = `${top - origin.top - parent.clientTop + parent.scrollTop}px`;
}

function proofPopClose(giveFocusBack) {
  const pop = document.getElementById("proof-pop");
  if (!pop || pop.hidden) return;
  pop.hidden = true;
  const opener = pop.opener;
  if (!opener) return;
  opener.setAttribute("aria-expanded", "false");
  if (giveFocusBack && opener.isConnected) opener.focus({ preventScroll: true });
}

function proofClaimLink(event) {
  return event.target instanceof Element ? event.target.closest("span.proof-claim > a, span.proof-value > a") : null;
}

document.addEventListener("click", (event) => {
  const link = proofClaimLink(event), pop = document.getElementById("proof-pop");
  if (link && event.button === 0 && !(event.metaKey || event.ctrlKey || event.shiftKey || event.altKey)) {
    // A plain click: the popover, not the card (a modified one follows the link). Nothing else may
    // take the click either: Material's instant navigation does not ask whether it was prevented.
    event.preventDefault();
    event.stopPropagation();
    if (pop && !pop.hidden && pop.opener === link) proofPopClose(true);
    else proofPopOpen(link);
  } else if (pop && !pop.hidden && pop.contains(event.target)) {
    if (event.target instanceof Element && event.target.closest("a")) proofPopClose(false); // off to the card
  } else if (pop && !pop.hidden) {
    const focusable = event.target instanceof Element && event.target.closest("a, button, input, select, textarea, summary, [tabindex]");
    proofPopClose(!focusable); // a click on nothing in particular gives the focus back to the claim
  }
}, true);

document.addEventListener("focusin", (event) => { // before a keyboard opens one, say it opens a dialog
  const link = proofClaimLink(event);
  if (link && !link.hasAttribute("aria-haspopup")) {
    link.setAttribute("aria-haspopup", "dialog");
    link.setAttribute("aria-expanded", "false");
  }
});

document.addEventListener("keydown", (event) => {
  if (event.key === "Escape") {
    const pop = document.getElementById("proof-pop");
    if (pop && !pop.hidden) {
      event.preventDefault();
      proofPopClose(true);
    }
    return;
  }
  const link = event.key === " " && proofClaimLink(event); // Enter clicks a link by itself
  if (!link) return;
  event.preventDefault();
  proofPopOpen(link);
});

// ---- a source unfolded in part --------------------------------------------------------------------

function proofFold(button, open) {
  const lines = Number(button.dataset.lines), plural = lines === 1 ? "line" : "lines";
  button.nextElementSibling.hidden = !open;
  button.setAttribute("aria-expanded", String(open));
  button.textContent = open ? `\u25B4 fold these ${lines} ${plural}` : `\u22EF show ${lines} ${plural}`;
}

function proofFoldAll(card, open) {
  const all = card.querySelector("button.proof-card__unfold-all");
  for (const marks of card.querySelectorAll(".proof-card__marks")) marks.hidden = !open;
  all.setAttribute("aria-expanded", String(open));
  all.textContent = open ? "Fold it again" : "Show the whole file";
}

document.addEventListener("click", (event) => {
  const target = event.target instanceof Element ? event.target : null;
  const fold = target && target.closest("button.proof-card__fold");
  const all = target && target.closest("button.proof-card__unfold-all");
  if (!fold && !all) return;
  const card = (fold || all).closest(".proof-card"), folds = [...card.querySelectorAll("button.proof-card__fold")];
  if (fold) proofFold(fold, fold.getAttribute("aria-expanded") !== "true");
  else for (const button of folds) proofFold(button, all.getAttribute("aria-expanded") !== "true");
  proofFoldAll(card, folds.every((button) => button.getAttribute("aria-expanded") === "true"));
});

// ---- a link's target inside a closed box ----------------------------------------------------------

function proofReveal(id) {
  // Opens every closed box around the element with this id; whether there was one to open.
  let target = null;
  try {
    target = id && document.getElementById(decodeURIComponent(id));
  } catch (error) {
    return false;
  }
  let opened = false;
  for (let box = target && target.closest("details:not([open])"); box; box = box.closest("details:not([open])")) {
    box.open = opened = true;
  }
  return opened;
}

document.addEventListener("click", (event) => {
  const link = event.target instanceof Element ? event.target.closest("a[href*='#']") : null;
  if (!link || event.defaultPrevented) return;
  const url = new URL(link.href, location.href);
  if (url.origin + url.pathname === location.origin + location.pathname) proofReveal(url.hash.slice(1));
});

function proofRevealHash() {
  const id = location.hash.slice(1);
  if (proofReveal(id)) requestAnimationFrame(() => document.getElementById(decodeURIComponent(id)).scrollIntoView());
}

addEventListener("hashchange", proofRevealHash);
if (typeof document$ !== "undefined") {
  document$.subscribe(() => location.hash && proofRevealHash());
} else if (location.hash) {
  addEventListener("DOMContentLoaded", proofRevealHash);
}
