// Small helpers to build elements: text is always set as text, never parsed as HTML.

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

export function clear(node) {
  while (node.firstChild) node.firstChild.remove();
  return node;
}

// An app's colour: the same app has the same colour on every page and every day.
export function colour(app) {
  let hash = 0;
  for (const ch of app) hash = (hash * 31 + ch.codePointAt(0)) >>> 0;
  return `hsl(${hash % 360} 55% 55%)`;
}

export const clock = (iso) => iso.slice(11, 19);
export const day = (iso) => iso.slice(0, 10);

// A snippet's [matched words] marked, and [REDACTED:kind] shown as what redaction replaced.
export function marked(text) {
  const out = [];
  const pattern = /\[([^\[\]\n]{1,200})\]/g;
  let at = 0;
  for (const found of text.matchAll(pattern)) {
    out.push(text.slice(at, found.index));
    const inner = found[1];
    if (inner.startsWith("REDACTED:")) out.push(el("span", { class: "redacted", title: "replaced by redaction", text: inner.slice(9) }));
    else out.push(el("mark", { text: inner }));
    at = found.index + found[0].length;
  }
  out.push(text.slice(at));
  return out;
}

// A frame's full text, with what redaction replaced shown (nothing else is marked).
export function redactedText(text) {
  const out = [];
  let at = 0;
  for (const found of text.matchAll(/\[REDACTED:([a-z_]+)\]/g)) {
    out.push(text.slice(at, found.index));
    out.push(el("span", { class: "redacted", title: "replaced by redaction", text: `[REDACTED:${found[1]}]` }));
    at = found.index + found[0].length;
  }
  out.push(text.slice(at));
  return out;
}
