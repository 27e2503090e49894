// The colour toggle in the header: the system's choice, light, dark, and round again.
//
// Material's bundle does the same when it runs, at the end of the page, and on a long page that
// costs three restyles of the whole document: it marks the body as switching, and it writes the
// color-scheme meta tag, which makes Chromium restyle every element (README, "Pages stay light").
// This runs right after the header is read (main.html), when the document holds a few dozen
// elements, so the same work costs next to nothing. The choice is stored where and as Material
// stores it (`__palette`, through Material's `__md_get` and `__md_set`), so a site moving back to
// Material's toggle keeps its readers' choices. Included into the page by main.html, so no
// template syntax in here.
(() => {
  const form = document.querySelector("form[data-site-palette]")
  const inputs = form ? [...form.querySelectorAll("input")] : []
  if (!inputs.length) return  // a site with one palette, or none, has no toggle
  const light = matchMedia("(prefers-color-scheme: light)")
  const header = document.querySelector("[data-md-component=header]")
  const meta = name => {
    const tag = document.createElement("meta")
    tag.name = name
    return document.head.appendChild(tag)
  }
  const themeColor = meta("theme-color")
  const colorScheme = meta("color-scheme")
  const colours = input => Object.fromEntries(["media", "scheme", "primary", "accent"].map(
    key => [key, input.getAttribute(`data-md-color-${key}`)]))
  let current = 0

  const apply = (index, switching) => {
    current = index
    inputs[index].checked = true  // so that the next option's label always changes something
    const color = colours(inputs[index])
    if (color.media === "(prefers-color-scheme)") {  // the system's choice: take the matching option's colours
      const media = light.matches ? "(prefers-color-scheme: light)" : "(prefers-color-scheme: dark)"
      const system = inputs.find(input => input.getAttribute("data-md-color-media") === media)
      if (system) Object.assign(color, colours(system), { media: color.media })
    }
    if (switching) document.body.setAttribute("data-md-color-switching", "")  // Material's CSS: no transitions
    for (const [key, value] of Object.entries(color))
      if (value !== null) document.body.setAttribute(`data-md-color-${key}`, value)
    inputs.forEach((input, i) => {
      const label = input.nextElementSibling
      if (label instanceof HTMLLabelElement) label.hidden = i !== index
    })
    __md_set("__palette", { index, color })
    if (header) {  // the browser's own colours follow the header's, as with Material
      const style = getComputedStyle(header)
      colorScheme.content = style.colorScheme
      const rgb = style.backgroundColor.match(/\d+/g) || []
      themeColor.content = "#" + rgb.slice(0, 3).map(value => (+value).toString(16).padStart(2, "0")).join("")
    }
    if (switching) setTimeout(() => document.body.removeAttribute("data-md-color-switching"))
  }

  const stored = __md_get("__palette")
  const first = inputs.findIndex(input => matchMedia(input.getAttribute("data-md-color-media")).matches)
  const index = stored && Number.isInteger(stored.index) ? stored.index : first
  apply(Math.max(0, Math.min(index, inputs.length - 1)), false)

  form.addEventListener("change", event => apply(inputs.indexOf(event.target), true))
  form.addEventListener("keydown", event => {  // Enter moves on, as a click on the toggle does
    if (event.key !== "Enter") return
    const next = inputs[(current + 1) % inputs.length]
    next.click()
    next.focus()
  })
  light.addEventListener("change", () => apply(current, true))  // the system changed its mind
})()
